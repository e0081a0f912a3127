/// One thing wrong with a config file: where (key path, line) and what to do about it.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var message: String

    public var description: String {
        let at = line.map { "line \($0): " } ?? ""
        return path.isEmpty ? "\(at)\(message)" : "\(at)\(path): \(message)"
    }
}

/// Thrown by `ConfigParser` with every problem found in one pass.
public struct ConfigError: Error, CustomStringConvertible {
    public var problems: [ConfigProblem]
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
