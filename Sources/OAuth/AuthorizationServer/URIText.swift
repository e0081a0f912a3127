/// The characters RFC 3986 allows in the parts of a URI a client chooses for this AS (its
/// `client_id`, its redirect URIs): anything else, a `"` in a host for one, is a URI two
/// readers (this gateway, curl, a browser) could read two ways, and is refused.
enum URIText {
    /// A registered name or IPv4 address (§3.2.2, as DNS writes names: letters, digits, `-`,
    /// `.`), not empty, no empty label.
    static func isHostName(_ s: Substring) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 253, !s.hasPrefix("."), !s.contains("..") else { return false }
        return s.utf8.allSatisfy { c in isAlphaNumeric(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") }
    }

    /// An IPv6 literal's inside (§3.2.2 `IPv6address`, loosely: hex digits, `:` and `.`).
    static func isIPv6(_ s: Substring) -> Bool {
        !s.isEmpty && s.contains(":")
            && s.utf8.allSatisfy { c in isHex(c) || c == UInt8(ascii: ":") || c == UInt8(ascii: ".") }
    }

    /// A path, query or both (§3.3, §3.4): `pchar`s, `/` and `?`, each `%` two hex digits.
    static func isPathAndQuery(_ s: Substring) -> Bool {
        let b = Array(s.utf8)
        var i = 0
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < b.count, isHex(b[i + 1]), isHex(b[i + 2]) else { return false }
                i += 3
                continue
            }
            guard isAlphaNumeric(c) || allowed.contains(c) else { return false }
            i += 1
        }
        return true
    }

    /// unreserved (less ALPHA DIGIT), sub-delims, `:` `@` (pchar), `/` `?`.
    private static let allowed: Set<UInt8> = Set("-._~!$&'()*+,;=:@/?".utf8)

    private static func isAlphaNumeric(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)
    }

    private static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }
}
