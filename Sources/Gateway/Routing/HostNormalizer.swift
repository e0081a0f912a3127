/// Normalizes the `Host` request header for routing: lowercase, port and trailing dot
/// removed. Returns nil for anything that is not a plausible host (RFC 9110 §7.2, RFC 3986
/// §3.2.2): the gateway answers 400 rather than guess.
public enum HostNormalizer {
    public static func normalize(_ value: String) -> String? {
        var text = Substring(value)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty && !(rest.hasPrefix(":") && UInt16(rest.dropFirst()) != nil) { return nil }
            let literal = text[...close]
            guard literal.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            return literal.lowercased()
        }
        if let colon = text.lastIndex(of: ":") {
            guard UInt16(text[text.index(after: colon)...]) != nil else { return nil }
            text = text[..<colon]
        }
        if text.hasSuffix(".") { text = text.dropLast() }
        let lower = text.lowercased()
        guard HostPattern.validName(lower) else { return nil }
        return lower
    }
}
