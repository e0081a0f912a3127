import Yams

/// One key of a config section, said once: its name, its row in docs/configuration.md (type
/// and default), and how its value reaches the model.
///
/// A section's `ConfigKeyTable` is the list of these; the keys the section accepts, the
/// "did you mean" of an unknown key and the reference test all read the table, so a key
/// added to it is accepted, suggested and required in the reference at once.
struct ConfigKey<Model, Context>: Sendable {
    /// How the key's value gets into the model.
    enum Reader: Sendable {
        /// Read by the table, in table order: the value at the key path into the model.
        case value(@Sendable (_ model: inout Model, _ node: Node, _ path: String, _ context: Context) -> Void)
        /// Read together with other keys by the named reader (a mapping of its own, or a value
        /// whose meaning depends on other keys, such as `auth` and its settings).
        case by(String)
    }

    let name: String
    /// The reference's `type` cell for this key, verbatim.
    let type: String
    /// The reference's `default` cell for this key, verbatim.
    let defaultText: String
    /// The model's own default, when the reference's default text can be checked against it:
    /// true when the text's first backticked value reads as the model's default value.
    let defaultCheck: (@Sendable (String) -> Bool)?
    let reader: Reader

    init(_ name: String, type: String, default defaultText: String, by reader: String) {
        self.name = name
        self.type = type
        self.defaultText = defaultText
        self.defaultCheck = nil
        self.reader = .by(reader)
    }

    init(
        _ name: String, type: String, default defaultText: String,
        checkedBy defaultCheck: @escaping @Sendable (String) -> Bool, by reader: String
    ) {
        self.name = name
        self.type = type
        self.defaultText = defaultText
        self.defaultCheck = defaultCheck
        self.reader = .by(reader)
    }

    init(
        _ name: String, type: String, default defaultText: String,
        read: @escaping @Sendable (_ model: inout Model, _ node: Node, _ path: String, _ context: Context) -> Void
    ) {
        self.name = name
        self.type = type
        self.defaultText = defaultText
        self.defaultCheck = nil
        self.reader = .value(read)
    }

    init(
        _ name: String, type: String, default defaultText: String,
        checkedBy defaultCheck: @escaping @Sendable (String) -> Bool,
        read: @escaping @Sendable (_ model: inout Model, _ node: Node, _ path: String, _ context: Context) -> Void
    ) {
        self.name = name
        self.type = type
        self.defaultText = defaultText
        self.defaultCheck = defaultCheck
        self.reader = .value(read)
    }
}

/// What the reference test needs of a key, whatever its section's model.
struct ConfigKeyDoc: Sendable {
    let name: String
    let type: String
    let defaultText: String
    let defaultCheck: (@Sendable (String) -> Bool)?
}

/// A section's keys in the order check-config lists them, and the reader of those that are
/// plain values.
struct ConfigKeyTable<Model, Context>: Sendable {
    let keys: [ConfigKey<Model, Context>]
    /// The names, in table order: what the section accepts.
    let names: [String]

    init(_ keys: [ConfigKey<Model, Context>]) {
        self.keys = keys
        self.names = keys.map(\.name)
    }

    var docs: [ConfigKeyDoc] {
        keys.map {
            ConfigKeyDoc(name: $0.name, type: $0.type, defaultText: $0.defaultText, defaultCheck: $0.defaultCheck)
        }
    }

    /// Reads every `.value` key present in `map` into `model`, in table order; `path` is the
    /// mapping's own key path. Keys read by another reader are left to it.
    func read(_ map: [String: Node], into model: inout Model, path: String, _ context: Context) {
        for key in keys {
            guard case .value(let read) = key.reader, let node = map[key.name] else { continue }
            read(&model, node, path.isEmpty ? key.name : "\(path).\(key.name)", context)
        }
    }
}

/// Default checks for the common value forms: the reference's default cell, its first value
/// in backticks, read as the parser would read it, equals the model's default.
enum ConfigDefault {
    /// The first backticked value of a reference cell (`` `4MB` `` → 4MB).
    static func firstValue(_ cell: String) -> String? {
        let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
        return parts.count >= 3 ? String(parts[1]) : nil
    }

    static func bool(_ model: Bool) -> @Sendable (String) -> Bool {
        { cell in firstValue(cell).map { ($0 == "true") == model && ($0 == "true" || $0 == "false") } ?? false }
    }

    static func size(_ model: Int) -> @Sendable (String) -> Bool {
        { cell in firstValue(cell).flatMap(ConfigValues.size) == model }
    }

    static func duration(_ model: Double) -> @Sendable (String) -> Bool {
        { cell in firstValue(cell).flatMap(ConfigValues.duration) == model }
    }

    static func number(_ model: Int) -> @Sendable (String) -> Bool {
        { cell in firstValue(cell).flatMap { Int($0) } == model }
    }

    static func text(_ model: String) -> @Sendable (String) -> Bool {
        { cell in firstValue(cell) == model }
    }
}
