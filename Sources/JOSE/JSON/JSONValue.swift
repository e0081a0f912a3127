/// A JSON value as JOSE reads it. Objects keep member order (for signing what was given)
/// and never hold a name twice: the parser refuses duplicates (RFC 7515 §4, RFC 8725 §3.9 —
/// two parsers picking different duplicates is how claims get smuggled).
public enum JSONValue: Equatable, Sendable {
    case object(JSONObject)
    case array([JSONValue])
    case string(String)
    /// The number's exact text (RFC 8259 §6), so nothing is lost before a claim check.
    case number(String)
    case bool(Bool)
    case null

    public var object: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }
    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }
    public var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// An integral number that fits in Int64 (e.g. NumericDate); fractional seconds are
    /// truncated toward zero, as RFC 7519 §2 allows non-integer NumericDates.
    public var int64: Int64? {
        guard case .number(let text) = self else { return nil }
        if let v = Int64(text) { return v }
        guard let d = Double(text), d.isFinite, d >= -9.2e18, d <= 9.2e18 else { return nil }
        return Int64(d.rounded(.towardZero))
    }

    public var double: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }
}

/// A JSON object with unique member names, in document order.
public struct JSONObject: Equatable, Sendable {
    public private(set) var names: [String] = []
    public private(set) var members: [String: JSONValue] = [:]

    public init() {}

    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        for (k, v) in pairs { self[k] = v }
    }

    public subscript(name: String) -> JSONValue? {
        get { members[name] }
        set {
            if let newValue {
                if members.updateValue(newValue, forKey: name) == nil { names.append(name) }
            } else if members.removeValue(forKey: name) != nil {
                names.removeAll { $0 == name }
            }
        }
    }

    /// Room for `minimumCapacity` members without regrowing (the parser's objects: a JOSE
    /// header or an access token's claims rarely has more than a dozen).
    init(minimumCapacity: Int) {
        names.reserveCapacity(minimumCapacity)
        members.reserveCapacity(minimumCapacity)
    }

    /// Adds a member; false, leaving the object as it was, if the name is already there
    /// (the parser's duplicate check). One hash lookup on the common path.
    mutating func insertNew(_ name: String, _ value: JSONValue) -> Bool {
        if let existing = members.updateValue(value, forKey: name) {
            members[name] = existing
            return false
        }
        names.append(name)
        return true
    }

    public var count: Int { names.count }
    public var isEmpty: Bool { names.isEmpty }
}
