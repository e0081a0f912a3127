/// Standard base64 with padding (RFC 4648 §4), for HTTP Basic (RFC 7617), `x5c` (RFC 7517
/// §4.7) and Structured Field byte sequences (RFC 9651 §3.3.5).
public enum Base64 {
    public static func standard(_ bytes: [UInt8]) -> String {
        var s = Base64URL.encode(bytes).replacingAll("-", "+").replacingAll("_", "/")
        while s.utf8.count % 4 != 0 { s += "=" }
        return s
    }

    /// The bytes of standard base64 (padding optional); nil if it is not base64.
    public static func decodeStandard(_ text: String) -> [UInt8]? {
        guard !text.contains("-") && !text.contains("_") else { return nil }
        var s = Substring(text)
        while s.last == "=" { s = s.dropLast() }
        return Base64URL.decode(String(s).replacingAll("+", "-").replacingAll("/", "_"))
    }
}

extension String {
    fileprivate func replacingAll(_ a: Character, _ b: Character) -> String { String(map { $0 == a ? b : $0 }) }
}
