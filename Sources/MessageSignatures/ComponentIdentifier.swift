public import RawStructuredFieldValues

/// One covered component (RFC 9421 §2): a field name or a derived component (`@method`),
/// with the parameters that say how its value is taken: `sf` (re-serialized as a Structured
/// Field, §2.1.1), `key` (one dictionary member, §2.1.2), `bs` (each field line as a byte
/// sequence, §2.1.3), `req` (from the request a response answers, §2.4), `name` (one query
/// parameter, §2.2.8). `tr` (a trailer, §2.1.4) is understood and refused: trailers are not
/// signed here.
public struct ComponentIdentifier: Hashable, Sendable, CustomStringConvertible {
    /// Lowercase (§2.1: field names are lowercased; derived names are lowercase).
    public let name: String
    public let item: Item
    /// The identifier as the signature base lists it (§2.5): the serialized item, made once
    /// (every base of every signed message lists it).
    public let serialized: String
    /// Which of `sf`, `bs`, `req`, `tr` it carries, read once: asked per component per message.
    private let flags: UInt8

    public var isDerived: Bool { name.utf8.first == UInt8(ascii: "@") }

    public init(_ name: String, parameters: OrderedMap<String, RFC9651BareItem> = OrderedMap()) throws {
        try self.init(Item(bareItem: .string(name), parameters: parameters))
    }

    /// A component as listed in a `Signature-Input` inner list: a string item with the
    /// parameters above, each of the type §6.5 gives it, in the combinations §2 allows.
    public init(_ item: Item) throws {
        guard case .string(let name) = item.rfc9651BareItem else {
            throw MessageSignatureError(.malformed, "a component identifier is a string")
        }
        guard Self.isName(name) else {
            throw MessageSignatureError(.malformed, "component \"\(name)\" is not a lowercase field name or @name")
        }
        let parameters = item.rfc9651Parameters
        for (key, value) in parameters {
            switch (key, value) {
            case ("sf", .bool(true)), ("bs", .bool(true)), ("req", .bool(true)), ("tr", .bool(true)): continue
            case ("key", .string), ("name", .string): continue
            case ("sf", _), ("bs", _), ("req", _), ("tr", _), ("key", _), ("name", _):
                throw MessageSignatureError(.malformed, "component \"\(name)\" has a mistyped ;\(key)")
            default:
                throw MessageSignatureError(.unsupportedComponent, "component \"\(name)\" has an unknown ;\(key)")
            }
        }
        let flags = parameters.isEmpty ? [] : Set(parameters.map { $0.0 })
        // §2.1.3: `bs` is not combined with `sf` or `key`; `name` belongs to @query-param only,
        // and @query-param needs it (§2.2.8).
        if flags.contains("bs"), flags.contains("sf") || flags.contains("key") {
            throw MessageSignatureError(.malformed, "component \"\(name)\" has ;bs with ;sf or ;key")
        }
        if (name == "@query-param") != flags.contains("name") {
            throw MessageSignatureError(.malformed, "only @query-param has a ;name, and it needs one")
        }
        if name.utf8.first == UInt8(ascii: "@"), flags.contains("sf") || flags.contains("key") || flags.contains("bs") {
            throw MessageSignatureError(.malformed, "derived component \(name) takes no field parameters")
        }
        self.name = name
        self.item = item
        if parameters.isEmpty {
            // Most components have none. A name is token characters, never `"` or `\`, so
            // quoting it is its whole serialization (RFC 9651 §4.1.6).
            serialized = "\"" + name + "\""
        } else {
            var serializer = StructuredFieldValueSerializer()
            // A string of printable ASCII with typed parameters always serializes.
            let bytes = (try? serializer.writeItemFieldValue(item)) ?? Array("\"\(name)\"".utf8)
            serialized = String(decoding: bytes, as: UTF8.self)
        }
        var bits: UInt8 = 0
        for (i, flag) in Self.flagNames.enumerated() where flags.contains(flag) { bits |= 1 << i }
        self.flags = bits
    }

    private static let flagNames = ["sf", "bs", "req", "tr"]

    /// A component as a config lists it: a bare name (`@method`, `content-digest`), or a
    /// Structured Field item with parameters (`"@query-param";name="id"`).
    public init(config text: String) throws {
        guard text.utf8.first == UInt8(ascii: "\"") else {
            try self.init(text)
            return
        }
        var parser = StructuredFieldValueParser(Array(text.utf8))
        let item: Item
        do { item = try parser.parseItemFieldValue() } catch {
            throw MessageSignatureError(.malformed, "\(text) is not a Structured Field item")
        }
        try self.init(item)
    }

    /// A field name (RFC 9110 §5.1: a token), lowercase (§2.1); or `@` and a lowercase
    /// derived name (§2.2). Nothing else can be a line of a base.
    static func isName(_ name: String) -> Bool {
        var bytes = name.utf8[...]
        if bytes.first == UInt8(ascii: "@") { bytes = bytes.dropFirst() }
        guard !bytes.isEmpty else { return false }
        return bytes.allSatisfy { b in
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                true
            default: false
            }
        }
    }

    public func has(_ parameter: String) -> Bool {
        if let i = Self.flagNames.firstIndex(of: parameter) { return flags & 1 << i != 0 }
        return item.rfc9651Parameters[parameter] != nil
    }

    public func string(_ parameter: String) -> String? {
        if case .string(let s) = item.rfc9651Parameters[parameter] { return s }
        return nil
    }

    public var description: String { serialized }
}
