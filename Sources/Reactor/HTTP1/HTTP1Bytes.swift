/// Byte classes of RFC 9110 §5.6 and RFC 9112, as switches and bit masks rather than tables:
/// a global table costs a lazy-initialisation check on every access in the parsers' inner
/// loops.
enum HTTP1Bytes {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// tchar (RFC 9110 §5.6.2): the bytes of a token — methods, field names, codings:
    /// DIGIT, ALPHA and "!#$%&'*+-.^_`|~", one bit per byte value in two words (bytes 0–63,
    /// 64–127; HTTP1BytesTests checks them against the RFC's list).
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        let word: UInt64 = b < 64 ? tcharLow : tcharHigh
        return b < 128 && (word >> UInt64(b & 63)) & 1 != 0
    }

    static var tcharLow: UInt64 { 0x03FF_6CFA_0000_0000 }

    /// A field name's bytes by class, one per byte value: "t" a tchar, ":" the colon that
    /// ends the name, "." anything else. A literal: its bytes sit in the binary, so a lookup
    /// is one load (HTTP1BytesTests checks it against `isTchar`).
    // swift-format-ignore: LineLength
    static var nameClasses: StaticString {
        ".................................t.ttttt..tt.tt.tttttttttt:......tttttttttttttttttttttttttt...ttttttttttttttttttttttttttttt.t.t................................................................................................................................."
    }
    static var tcharHigh: UInt64 { 0x57FF_FFFF_C7FF_FFFE }

    /// Whether `bytes[from..<to]` are all field-value bytes (`isFieldValueByte`): eight at
    /// a time while no byte in a word is below 0x20 or is DEL, then byte by byte. Field
    /// values are the long part of a head (cookies, tokens).
    @inline(__always)
    static func allFieldValueBytes(_ bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Bool {
        guard let base = bytes.baseAddress else { return from >= to }
        var i = from
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= to {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            // Some byte < 0x20 (bytes ≥ 0x80 never count: obs-text is allowed), or some byte
            // equal to 0x7F: the classic "has less" / "has zero" word tests.
            let below = (w &- 0x20 &* ones) & ~w & highs
            let x = w ^ (0x7F &* ones)
            let del = (x &- ones) & ~x & highs
            if below | del != 0 { break }
            i += 8
        }
        while i < to {
            if !isFieldValueByte(base[i]) { return false }
            i += 1
        }
        return true
    }

    /// SP / HTAB: OWS and BWS (RFC 9110 §5.6.3).
    @inline(__always)
    static func isWhitespace(_ b: UInt8) -> Bool { b == sp || b == htab }

    /// `value` without its leading and trailing OWS (RFC 9110 §5.6.3), in place.
    @inline(__always)
    static func trimmingOWS(_ value: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var start = 0
        var end = value.count
        while start < end, isWhitespace(value[start]) { start += 1 }
        while end > start, isWhitespace(value[end - 1]) { end -= 1 }
        return UnsafeBufferPointer(rebasing: value[start..<end])
    }

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
