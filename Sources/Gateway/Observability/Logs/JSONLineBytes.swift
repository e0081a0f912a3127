import Reactor

/// Appends JSON (RFC 8259) members to a byte buffer, for log lines written by hand: no
/// dictionary, no intermediate `String`, no formatter. Strings are copied as they are where
/// their bytes allow it and escaped only where they must be, so that every line is valid
/// JSON whatever the bytes: control bytes (and DEL) as `\uXXXX` or their short escapes,
/// `"` and `\` with a backslash, and each byte that is not part of well-formed UTF-8
/// (RFC 3629 §4, the "Well-Formed UTF-8 Byte Sequences" table of Unicode §3.9) as
/// `\ufffd`, the replacement character.
struct JSONLineBytes {
    var bytes: [UInt8]

    init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// `{"key":` or `,"key":` — `key` is one of the log's own names (a literal), never
    /// escaped.
    @inline(__always)
    mutating func key(_ key: String, first: Bool = false) {
        bytes.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(copying: key.utf8.span)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// A key that comes from elsewhere (swift-log metadata): escaped like any string.
    mutating func key(escaping key: String) {
        bytes.append(UInt8(ascii: ","))
        string(key)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Text of the log's own (a literal), copied as it is.
    mutating func raw(_ text: String) {
        bytes.append(copying: text.utf8.span)
    }

    mutating func endLine() {
        bytes.append(UInt8(ascii: "}"))
        bytes.append(UInt8(ascii: "\n"))
    }

    mutating func string(_ value: String) {
        string(utf8: value.utf8.span)
    }

    /// A JSON string of these bytes, whatever they are.
    mutating func string(utf8 value: Span<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var plainFrom = 0
        var i = 0
        let n = value.count
        while i < n {
            let b = value[i]
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                i += 1
                continue
            }
            let length = b >= 0x80 ? Self.wellFormedLength(value, at: i) : 0
            if length > 0 {
                i += length
                continue
            }
            if plainFrom < i { bytes.append(copying: value.extracting(plainFrom..<i)) }
            escape(b)
            i += 1
            plainFrom = i
        }
        if plainFrom < n { bytes.append(copying: value.extracting(plainFrom..<n)) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// One byte that cannot stand as it is: a control byte, `"`, `\`, or a byte of no
    /// well-formed UTF-8 sequence (which becomes U+FFFD: JSON text must be Unicode).
    private mutating func escape(_ b: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch b {
        case 0x22: bytes.append(0x22)
        case 0x5C: bytes.append(0x5C)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x80...: raw("ufffd")
        default:
            raw("u00")
            bytes.append(Self.hex[Int(b >> 4)])
            bytes.append(Self.hex[Int(b & 0xF)])
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// The length of the well-formed UTF-8 sequence that starts at `i` (a byte ≥ 0x80), or 0.
    /// The ranges of each second byte rule out overlong forms, surrogates and code points
    /// past U+10FFFF.
    static func wellFormedLength(_ s: Span<UInt8>, at i: Int) -> Int {
        let b0 = s[i]
        let left = s.count - i
        @inline(__always) func cont(_ k: Int) -> Bool { s[i + k] & 0xC0 == 0x80 }
        switch b0 {
        case 0xC2...0xDF:
            return left >= 2 && cont(1) ? 2 : 0
        case 0xE0...0xEF:
            guard left >= 3, cont(1), cont(2) else { return 0 }
            let b1 = s[i + 1]
            if b0 == 0xE0 && b1 < 0xA0 { return 0 }
            if b0 == 0xED && b1 > 0x9F { return 0 }
            return 3
        case 0xF0...0xF4:
            guard left >= 4, cont(1), cont(2), cont(3) else { return 0 }
            let b1 = s[i + 1]
            if b0 == 0xF0 && b1 < 0x90 { return 0 }
            if b0 == 0xF4 && b1 > 0x8F { return 0 }
            return 4
        default:
            return 0
        }
    }

    mutating func int(_ value: Int) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            // Int.min has no positive counterpart; its magnitude fits in a UInt.
            unsigned(UInt64(bitPattern: Int64(0 &- value)))
        } else {
            unsigned(UInt64(value))
        }
    }

    /// Decimal digits, written in place at the end of the buffer (last digit first).
    mutating func unsigned(_ value: UInt64) {
        var length = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            length += 1
        }
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: length))
        var at = bytes.count
        var v = value
        repeat {
            at -= 1
            bytes[at] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        } while v > 0
    }

    /// Milliseconds with three decimals, from microseconds: `12.345`, `0.042`.
    mutating func milliseconds(micros: Int) {
        let m = max(0, micros)
        unsigned(UInt64(m / 1000))
        let frac = m % 1000
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(ascii: "0") + UInt8(frac / 100))
        bytes.append(UInt8(ascii: "0") + UInt8(frac / 10 % 10))
        bytes.append(UInt8(ascii: "0") + UInt8(frac % 10))
    }

    mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    mutating func null() { raw("null") }
}
