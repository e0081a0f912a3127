/// Normalizes the `Host` request header for routing: lowercase, port and trailing dot
/// removed. Returns nil for anything that is not a plausible host (RFC 9110 §7.2, RFC 3986
/// §3.2.2): the gateway answers 400 rather than guess.
///
/// Runs on every request, so it works on the value's bytes and builds one string (hostnames
/// up to 15 bytes, which Swift keeps inline, need no heap).
enum HostNormalizer {
    static func normalize(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { normalize(bytes: $0) }
    }

    private static func normalize(bytes b: UnsafeBufferPointer<UInt8>) -> String? {
        if b.first == UInt8(ascii: "[") { return ipLiteral(b) }
        var end = b.count
        if let colon = b.lastIndex(of: UInt8(ascii: ":")) {
            guard isPort(UnsafeBufferPointer(rebasing: b[(colon + 1)...])) else { return nil }
            end = colon
        }
        if end > 0 && b[end - 1] == UInt8(ascii: ".") { end -= 1 }
        // ASCII lowercase only: a non-ASCII byte stays as it is, and `validName` refuses it
        // (Unicode lowercasing would turn the Kelvin sign into "k").
        let lower = String(unsafeUninitializedCapacity: end) { out in
            for i in 0..<end { out[i] = b[i] | (b[i] >= 0x41 && b[i] <= 0x5A ? 0x20 : 0) }
            return end
        }
        return HostPattern.validName(lower) ? lower : nil
    }

    /// `[` IPv6 or IPvFuture literal `]` with an optional port; hex digits, ":" and "." inside.
    private static func ipLiteral(_ b: UnsafeBufferPointer<UInt8>) -> String? {
        guard let close = b.firstIndex(of: UInt8(ascii: "]")) else { return nil }
        let rest = UnsafeBufferPointer(rebasing: b[(close + 1)...])
        if !rest.isEmpty && !(rest[0] == UInt8(ascii: ":") && isPort(UnsafeBufferPointer(rebasing: rest[1...]))) {
            return nil
        }
        let inner = b[1..<close]
        guard !inner.isEmpty,
            inner.allSatisfy({ c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46) || c == 0x3a
                    || c == 0x2e
            })
        else { return nil }
        return String(decoding: b[...close], as: UTF8.self).lowercased()
    }

    /// 1–5 ASCII digits, no sign, at most 65535.
    static func isPort(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !s.isEmpty, s.count <= 5 else { return false }
        var n = 0
        for c in s {
            guard c >= 0x30 && c <= 0x39 else { return false }
            n = n * 10 + Int(c - 0x30)
        }
        return n <= 65535
    }
}
