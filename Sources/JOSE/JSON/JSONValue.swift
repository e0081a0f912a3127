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
        if let v = Self.shortInteger(text) { return v }
        if let v = Int64(text) { return v }
        guard let d = Double(text), d.isFinite, d >= -9.2e18, d <= 9.2e18 else { return nil }
        return Int64(d.rounded(.towardZero))
    }

    public var double: Double? {
        guard case .number(let text) = self else { return nil }
        return Double(text)
    }

    /// `text` read as `Int64(text)` would, when it is an optional "-" and 1 to 18 digits (a
    /// NumericDate always is): a loop over its bytes instead of the generic parser.
    static func shortInteger(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { b in
            let negative = b.first == UInt8(ascii: "-")
            let start = negative ? 1 : 0
            guard b.count > start, b.count - start <= 18 else { return nil }
            var v: Int64 = 0
            for i in start..<b.count {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                v = v * 10 + Int64(d)
            }
            return negative ? -v : v
        }
    }
}
