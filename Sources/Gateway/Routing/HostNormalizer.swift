/// Normalizes the `Host` request header for routing: lowercase, port and trailing dot
/// removed. Returns nil for anything that is not a plausible host (RFC 9110 §7.2, RFC 3986
/// §3.2.2): the gateway answers 400 rather than guess.
enum HostNormalizer {
    static func normalize(_ value: String) -> String? {
        var text = Substring(value)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty && !(rest.hasPrefix(":") && isPort(rest.dropFirst())) { return nil }
            let literal = text[...close]
            let inner = literal.dropFirst().dropLast()
            guard !inner.isEmpty,
                inner.utf8.allSatisfy({ c in
                    (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46) || c == 0x3a
                        || c == 0x2e
                })
            else { return nil }
            return literal.lowercased()
        }
        if let colon = text.lastIndex(of: ":") {
            guard isPort(text[text.index(after: colon)...]) else { return nil }
            text = text[..<colon]
        }
        if text.hasSuffix(".") { text = text.dropLast() }
        let lower = text.lowercased()
        guard HostPattern.validName(lower) else { return nil }
        return lower
    }

    /// 1–5 ASCII digits, no sign, at most 65535.
    static func isPort(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.count <= 5 && s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && Int(s)! <= 65535
    }
}
