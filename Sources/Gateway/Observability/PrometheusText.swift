/// The Prometheus text exposition format (0.0.4), written in one place: each family once,
/// `# HELP` and `# TYPE` before its samples, and every label value escaped (backslash,
/// double quote and line feed), so a route or issuer name from the config cannot break a line.
struct PrometheusText {
    enum Kind: String { case counter, gauge, histogram, summary }

    private(set) var text = ""

    /// Starts a family: its help line (backslash and line feed escaped) and its type.
    mutating func family(_ name: String, _ kind: Kind, help: String) {
        let escapedHelp = help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
        text += "# HELP \(name) \(escapedHelp)\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample of the current family (`name` may carry a suffix: `_bucket`, `_sum`, `_count`).
    mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: some CustomStringConvertible) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " \(value)\n"
    }

    /// A family with a single unlabelled sample.
    mutating func single(_ name: String, _ kind: Kind, help: String, _ value: some CustomStringConvertible) {
        family(name, kind, help: help)
        sample(name, [], value)
    }

    /// A family with one sample per value of one label, in the order given.
    mutating func labelled<V: CustomStringConvertible>(
        _ name: String, _ kind: Kind, help: String, label: String,
        _ samples: [(String, V)]
    ) {
        family(name, kind, help: help)
        for (value, count) in samples { sample(name, [(label, value)], count) }
    }

    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
