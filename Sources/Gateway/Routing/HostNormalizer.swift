import Reactor

/// Normalizes the `Host` request header for routing: lowercase, port and trailing dot
/// removed. Returns nil for anything that is not a plausible host (RFC 9110 §7.2, RFC 3986
/// §3.2.2): the gateway answers 400 rather than guess.
///
/// Runs on every request, so it works on the value's bytes and builds at most one string
/// (none for a lowercase host without port; hostnames up to 15 bytes, which Swift keeps
/// inline, need no heap).
enum HostNormalizer {
    static func normalize(_ value: String) -> String? {
        let b = value.utf8.span
        if !b.isEmpty && b[0] == UInt8(ascii: "[") { return ipLiteral(value) }
        var end = b.count
        var colon = b.count - 1
        while colon >= 0 && b[colon] != UInt8(ascii: ":") { colon -= 1 }
        if colon >= 0 {
            guard isPort(b.extracting((colon + 1)...)) else { return nil }
            end = colon
        }
        if end > 0 && b[end - 1] == UInt8(ascii: ".") { end -= 1 }
        // ASCII lowercase only: `validName` refuses any other byte (Unicode lowercasing would
        // turn the Kelvin sign into "k").
        var upper = false
        for i in 0..<end {
            if b[i] >= 0x80 { return nil }
            if b[i] >= 0x41 && b[i] <= 0x5A { upper = true }
        }
        let host = end == b.count ? value : String(Substring(value.utf8.prefix(end)))
        let lower = upper ? host.lowercased() : host
        return HostPattern.validName(lower) ? lower : nil
    }

    /// `[` IPv6 or IPvFuture literal `]` with an optional port; hex digits, ":" and "." inside.
    private static func ipLiteral(_ value: String) -> String? {
        let b = value.utf8.span
        guard let close = b.firstIndex(of: UInt8(ascii: "]")) else { return nil }
        let rest = b.extracting((close + 1)...)
        if !rest.isEmpty && !(rest[0] == UInt8(ascii: ":") && isPort(rest.extracting(1...))) {
            return nil
        }
        guard close > 1 else { return nil }
        for i in 1..<close {
            let c = b[i]
            let allowed =
                (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46) || c == 0x3a
                || c == 0x2e
            if !allowed { return nil }
        }
        return String(Substring(value.utf8.prefix(close + 1))).lowercased()
    }

    /// 1–5 ASCII digits, no sign, at most 65535.
    static func isPort(_ s: Span<UInt8>) -> Bool {
        guard !s.isEmpty, s.count <= 5 else { return false }
        var n = 0
        for i in s.indices {
            let c = s[i]
            guard c >= 0x30 && c <= 0x39 else { return false }
            n = n * 10 + Int(c - 0x30)
        }
        return n <= 65535
    }
}

/// The last `Host` value a worker normalized, and what it became: clients send the same value
/// on request after request, so the next one costs a compare instead of a normalization
/// (about a thousand instructions a request, a tenth of the gateway's own request path).
/// `normalize` is a pure function, so the last answer is the answer. Loop-thread only: one
/// per worker.
final class HostMemo {
    private var raw = ""
    /// nil: nothing remembered yet; `.some(nil)`: `raw` is not a valid host.
    private var normalized: String??

    func normalize(_ value: String) -> String? {
        if let known = normalized, value == raw { return known }
        let result = HostNormalizer.normalize(value)
        raw = value
        normalized = .some(result)
        return result
    }
}
