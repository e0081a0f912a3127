/// Byte classes of RFC 9110 §5.6 and RFC 9112, as switches rather than tables: a global
/// table costs a lazy-initialisation check on every access in the parsers' inner loops.
enum HTTP1Bytes {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// tchar (RFC 9110 §5.6.2): the bytes of a token — methods, field names, codings.
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    /// SP / HTAB: OWS and BWS (RFC 9110 §5.6.3).
    @inline(__always)
    static func isWhitespace(_ b: UInt8) -> Bool { b == sp || b == htab }

    /// field-vchar / obs-text / SP / HTAB: what may appear inside a field value
    /// (RFC 9110 §5.5); the same set makes up a reason-phrase (RFC 9112 §4).
    @inline(__always)
    static func isFieldValueByte(_ b: UInt8) -> Bool { b >= 0x20 ? b != 0x7F : b == htab }

    /// The bytes a request-target may hold: visible ASCII. RFC 3986 is narrower, but the
    /// target's own syntax is the gateway's to judge (path rules live there); the parser
    /// only keeps out what could change where the line splits or what a next hop sees:
    /// whitespace, controls, DEL and non-ASCII.
    @inline(__always)
    static func isTargetByte(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt64? {
        switch b {
        case 0x30...0x39: UInt64(b - 0x30)
        case 0x41...0x46: UInt64(b - 0x41 + 10)
        case 0x61...0x66: UInt64(b - 0x61 + 10)
        default: nil
        }
    }

    /// ASCII case-insensitive comparison with a lowercase literal (field names, codings,
    /// connection options). Only correct for literals made of letters, digits and "-".
    @inline(__always)
    static func equalsLowercase<C: Collection>(_ bytes: C, _ literal: StaticString) -> Bool where C.Element == UInt8 {
        literal.withUTF8Buffer { lit in
            guard bytes.count == lit.count else { return false }
            var j = 0
            for b in bytes {
                let folded = (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
                if folded != lit[j] { return false }
                j += 1
            }
            return true
        }
    }

    /// Calls `body` with the UTF-8 bytes of `text` in place (a native string's own storage,
    /// a small one's copy on the stack): `var copy = text; copy.withUTF8` costs a retain and
    /// a release of the string for every call.
    @inline(__always)
    static func withUTF8<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = text.utf8.withContiguousStorageIfAvailable(body) { return r }
        var copy = text
        return copy.withUTF8(body)
    }
}
