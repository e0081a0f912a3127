/// Standard base64 with padding (RFC 4648 §4), for HTTP Basic (RFC 7617), `x5c` (RFC 7517
/// §4.7) and Structured Field byte sequences (RFC 9651 §3.3.5). The same one-pass coder as
/// base64url, with the standard alphabet: signatures and digests are encoded on every
/// signed message.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func standard(_ bytes: [UInt8]) -> String {
        Base64URL.encode(bytes, alphabet: alphabet, padded: true)
    }

    /// The bytes of standard base64; nil if it is not base64. Padding may be left out (RFC
    /// 9651 §4.2.7 asks parsers not to fail without it), but when present it must be the one
    /// or two `=` that make the length a multiple of four (RFC 4648 §3.2).
    public static func decodeStandard(_ text: String) -> [UInt8]? {
        var bytes = Array(text.utf8)
        let length = bytes.count
        var padding = 0
        while bytes.last == UInt8(ascii: "=") {
            bytes.removeLast()
            padding += 1
        }
        if padding > 2 || (padding > 0 && length % 4 != 0) { return nil }
        // Mapped onto base64url's alphabet, whose strict decoder then judges it; a text that
        // already uses base64url's own two characters is not standard base64.
        for i in bytes.indices {
            switch bytes[i] {
            case UInt8(ascii: "-"), UInt8(ascii: "_"): return nil
            case UInt8(ascii: "+"): bytes[i] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[i] = UInt8(ascii: "_")
            default: break
            }
        }
        return Base64URL.decode(ascii: bytes)
    }
}
