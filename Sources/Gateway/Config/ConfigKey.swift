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
        /// Read by the table in table order whether the key is there or not (nil): a key
        /// whose absence means something to work out (the default listener, tracing from the
        /// environment, "routes is required").
        case always(@Sendable (_ model: inout Model, _ node: Node?, _ path: String, _ context: Context) -> Void)
        /// Read with the other keys of its group, by the group's reader, once per mapping at
        /// the group's first key: keys whose meaning depends on each other (`keys` or
        /// `keys_file`; `issuers` and the `clients` that name them).
        case group(ConfigKeyGroup<Model, Context>)
        /// Read by a module, at its read point: a key of a core section that only a module
        /// understands (an upstream's `credentials`, read once the clients it names are).
        case module(any GatewayModule.Type)
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
    /// In the top-level table: the modules' read point after which the key is read (the
    /// sections a key may name are read first); nil: before any module's.
    let readAt: ModuleReadPoint?

    init(
        _ name: String, type: String, default defaultText: String,
        checkedBy defaultCheck: (@Sendable (String) -> Bool)? = nil, readAt: ModuleReadPoint? = nil,
        reader: Reader
    ) {
        self.name = name
        self.type = type
        self.defaultText = defaultText
        self.defaultCheck = defaultCheck
        self.reader = reader
        self.readAt = readAt
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
        readAt = nil
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
        readAt = nil
    }
}

extension ConfigKey {
    /// This key as a row of a table whose model holds this one's model at `field` (a
    /// transmitter's `auth` reads a grant's keys with the grant's own rows), with that
    /// section's own reference cells. Only a key read as a value can be.
    func lifted<Outer>(
        into field: WritableKeyPath<Outer, Model> & Sendable, type: String, default defaultText: String
    ) -> ConfigKey<Outer, Context> {
        guard case .value(let read) = reader else { preconditionFailure("\(name) is not read as a value") }
        return .init(name, type: type, default: defaultText) { outer, n, p, c in read(&outer[keyPath: field], n, p, c) }
    }
}

/// A key as given, in a section's draft (a table whose keys go together: `UpstreamKeys`,
/// `ListenerTLSKeys`, …): its node, for the problems the combining step reports, and its
/// value when it read (nil: the row reported why not).
struct GivenKey<Value> {
    let value: Value?
    let node: Node
}

/// What the rows of a section whose keys name other sections (a route's upstream and issuers,
/// the authorization server's login client) are handed besides the key's own value.
struct ConfigContext {
    /// The sections read before this one.
    let cfg: GatewayConfig
    let r: ConfigReader
}

/// Keys of one mapping read together by one reader (`ConfigKey.Reader.group`): the rows say
/// which keys they are; the reader gets the whole mapping and the mapping's path.
final class ConfigKeyGroup<Model, Context>: Sendable {
    let read: @Sendable (_ model: inout Model, _ map: [String: Node], _ path: String, _ context: Context) -> Void

    init(
        _ read:
            @escaping @Sendable (_ model: inout Model, _ map: [String: Node], _ path: String, _ context: Context)
            -> Void
    ) {
        self.read = read
    }
}

extension ConfigKeyGroup where Context == ConfigReader {
    /// `KEY` or `KEY_file` (one or the other: ConfigReader.secret): `use` gets the text, the
    /// node it came from and the mapping's path; nothing when neither is there.
    static func secret(
        _ key: String,
        use:
            @escaping @Sendable (_ model: inout Model, _ text: String, _ node: Node?, _ path: String, ConfigReader)
            -> Void
    ) -> ConfigKeyGroup {
        ConfigKeyGroup { model, m, path, r in
            let node = m[key] ?? m[key + "_file"]
            guard node != nil, let text = r.secret(m, key: key, path: path) else { return }
            use(&model, text, node, path, r)
        }
    }

    /// `KEY` (a list of strings) or `KEY_file` (one per line), one or the other: `use` gets
    /// each text with the node it came from (the list's item, or the file's key) and the key's
    /// path; nothing when neither is there.
    static func lines(
        _ key: String,
        use:
            @escaping @Sendable (
                _ model: inout Model, _ texts: [(text: String, node: Node?)], _ path: String, ConfigReader
            ) -> Void
    ) -> ConfigKeyGroup {
        ConfigKeyGroup { model, m, path, r in
            let keyPath = "\(path).\(key)"
            let inline = m[key]
            let file = m[key + "_file"]
            var texts: [(text: String, node: Node?)] = []
            if inline != nil && file != nil {
                r.problem(keyPath, inline, "give either \(key) or \(key)_file, not both")
            } else if let inline, let seq = r.sequence(inline, path: keyPath) {
                texts = seq.enumerated().compactMap { j, k in r.string(k, path: "\(keyPath)[\(j)]").map { ($0, k) } }
            } else if file != nil, let text = r.secret(inline: nil, file: file, key: key, path: path) {
                texts = text.split(separator: "\n").map { (String($0), file) }
            }
            guard !texts.isEmpty else { return }
            use(&model, texts, keyPath, r)
        }
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

    /// Reads the keys of `map` into `model`, in table order: each `.value` key present, each
    /// `.always` key, and each group once; `path` is the mapping's own key path. `at`: only
    /// the keys read at that point (the top-level table's `readAt`). Keys read by another
    /// reader are left to it.
    func read(
        _ map: [String: Node], into model: inout Model, path: String, _ context: Context,
        at point: ModuleReadPoint? = nil
    ) {
        var groupsRead: [ObjectIdentifier] = []
        for key in keys where key.readAt == point {
            let keyPath = path.isEmpty ? key.name : "\(path).\(key.name)"
            switch key.reader {
            case .value(let read):
                if let node = map[key.name] { read(&model, node, keyPath, context) }
            case .always(let read):
                read(&model, map[key.name], keyPath, context)
            case .group(let group):
                let id = ObjectIdentifier(group)
                guard !groupsRead.contains(id) else { continue }
                groupsRead.append(id)
                group.read(&model, map, path, context)
            case .module:
                continue
            }
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
