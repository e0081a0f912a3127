import Yams

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

/// The config's nodes by key path, as problems name them (`routes[3].match.path_template`,
/// `shared_signals.corp.endpoint_url`): a check made once the sections are read finds the node
/// its problem points at (for the line) from the path it reports, rather than by looking each
/// key up again. A name may hold dots (a claim path, a host): the longest key that is there
/// is taken.
enum ConfigKeyPath {
    /// The node at `path` under the top-level mapping; nil when the path names nothing there.
    static func node(at path: String, in top: [String: Node]) -> Node? {
        walk(parts(path)[...], from: nil, top: top)
    }

    /// The node at `path` under `root` (a path relative to it: `match.path_template`).
    static func node(at path: String, under root: Node) -> Node? {
        walk(parts(path)[...], from: root, top: nil)
    }

    private enum Part {
        case key(String)
        case index(Int)
    }

    private static func parts(_ path: String) -> [Part] {
        var out: [Part] = []
        var name = ""
        var index: String?
        for ch in path {
            switch ch {
            case "." where index == nil:
                if !name.isEmpty { out.append(.key(name)) }
                name = ""
            case "[" where index == nil:
                if !name.isEmpty { out.append(.key(name)) }
                name = ""
                index = ""
            case "]" where index != nil:
                if let i = Int(index ?? "") { out.append(.index(i)) }
                index = nil
            default:
                if index != nil { index?.append(ch) } else { name.append(ch) }
            }
        }
        if !name.isEmpty { out.append(.key(name)) }
        return out
    }

    private static func walk(_ parts: ArraySlice<Part>, from node: Node?, top: [String: Node]?) -> Node? {
        guard let first = parts.first else { return node }
        switch first {
        case .index(let i):
            guard let items = node?.sequence.map(Array.init), i >= 0, i < items.count else { return nil }
            return walk(parts.dropFirst(), from: items[i], top: nil)
        case .key:
            // The keys that follow one another, joined by dots, longest first.
            let names = parts.prefix { if case .key = $0 { true } else { false } }.map {
                if case .key(let k) = $0 { k } else { "" }
            }
            for count in stride(from: names.count, through: 1, by: -1) {
                let key = names.prefix(count).joined(separator: ".")
                let child = top.map { $0[key] } ?? node?.mapping?[key]
                if let child { return walk(parts.dropFirst(count), from: child, top: nil) }
            }
            return nil
        }
    }
}
