import Reactor

/// JSON (RFC 8259) text for log lines written by hand, straight into capacity the caller
/// reserved (an `OutputSpan`): no dictionary, no intermediate `String`, no formatter, and one
/// capacity check for a whole line rather than one for each piece. The `…Bound` sizes say how
/// much to reserve; writing past the reservation traps.
///
/// Strings are copied as they are where their bytes allow it and escaped only where they
/// must be, so that every line is valid JSON whatever the bytes: control bytes (and DEL) as
/// `\uXXXX` or their short escapes, `"` and `\` with a backslash, and each byte that is not
/// part of well-formed UTF-8 (RFC 3629 §4, the "Well-Formed UTF-8 Byte Sequences" table of
/// Unicode §3.9) as `\ufffd`, the replacement character.
enum JSONText {
    /// The most bytes `string` writes for `count` bytes: each may become a six-byte
    /// `\uXXXX`, and the two quotes.
    static func stringBound(_ count: Int) -> Int { 6 * count + 2 }
    /// The most bytes `int`, `unsigned` or `milliseconds` write: 20 digits and a sign, or
    /// 16 digits, a point and three decimals.
    static let numberBound = 21
    /// `{"ts":"2026-11-25T12:00:10.123Z"`.
    static let headBound = 8 + LogTimestamp.length

    /// `{"ts":"…"` — the first member of every log line, the time now (`LogTimestamp`).
    static func head(time: inout LogTimestamp, to o: inout OutputSpan<UInt8>) {
        key("ts", first: true, to: &o)
        o.append(UInt8(ascii: "\""))
        time.append(to: &o)
        o.append(UInt8(ascii: "\""))
    }

    /// `{"key":` or `,"key":` — `key` is one of the log's own names (a literal), never
    /// escaped: `key.utf8.count + 4` bytes.
    @inline(__always)
    static func key(_ key: StaticString, first: Bool = false, to o: inout OutputSpan<UInt8>) {
        o.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
        o.append(UInt8(ascii: "\""))
        o.append(key)
        o.append(UInt8(ascii: "\""))
        o.append(UInt8(ascii: ":"))
    }

    static func endLine(to o: inout OutputSpan<UInt8>) {
        o.append(UInt8(ascii: "}"))
        o.append(UInt8(ascii: "\n"))
    }

    /// A JSON string of these bytes, whatever they are: at most `stringBound(value.count)`.
    static func string(utf8 value: Span<UInt8>, to o: inout OutputSpan<UInt8>) {
        o.append(UInt8(ascii: "\""))
        var plainFrom = 0
        var i = 0
        let n = value.count
        let bytes = value.bytes
        while i < n {
            // Eight bytes at a time while all of them are plain (request ids, paths and route
            // names nearly always are): a quarter of the instructions of a byte-by-byte scan.
            if n - i >= 8, allPlain(bytes.unsafeLoadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                i += 8
                continue
            }
            let b = value[i]
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                i += 1
                continue
            }
            let length = b >= 0x80 ? wellFormedLength(value, at: i) : 0
            if length > 0 {
                i += length
                continue
            }
            if plainFrom < i { o.append(copying: value.extracting(plainFrom..<i)) }
            escape(b, to: &o)
            i += 1
            plainFrom = i
        }
        if plainFrom < n { o.append(copying: value.extracting(plainFrom..<n)) }
        o.append(UInt8(ascii: "\""))
    }

    /// Whether none of the eight bytes in `word` needs a look of its own: no control byte
    /// (below 0x20), DEL, `"`, `\` or byte of 0x80 and up. Each test flags a byte's high bit
    /// when the byte matches ("Determine if a word has a byte less than n" and "… has a zero
    /// byte", Bit Twiddling Hacks); a match anywhere makes the sum nonzero.
    @inline(__always)
    static func allPlain(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZeroByte(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let below0x20 = (word &- ones &* 0x20) & ~word & highs
        let flagged =
            below0x20 | (word & highs) | hasZeroByte(word ^ (ones &* 0x7F)) | hasZeroByte(word ^ (ones &* 0x22))
            | hasZeroByte(word ^ (ones &* 0x5C))
        return flagged == 0
    }

    /// One byte that cannot stand as it is: a control byte, `"`, `\`, or a byte of no
    /// well-formed UTF-8 sequence (which becomes U+FFFD: JSON text must be Unicode).
    private static func escape(_ b: UInt8, to o: inout OutputSpan<UInt8>) {
        o.append(UInt8(ascii: "\\"))
        switch b {
        case 0x22: o.append(0x22)
        case 0x5C: o.append(0x5C)
        case 0x0A: o.append(UInt8(ascii: "n"))
        case 0x0D: o.append(UInt8(ascii: "r"))
        case 0x09: o.append(UInt8(ascii: "t"))
        case 0x08: o.append(UInt8(ascii: "b"))
        case 0x0C: o.append(UInt8(ascii: "f"))
        case 0x80...: o.append("ufffd")
        default:
            o.append("u00")
            o.append(hexDigit(b >> 4))
            o.append(hexDigit(b & 0xF))
        }
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10 }

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

    static func int(_ value: Int, to o: inout OutputSpan<UInt8>) {
        if value < 0 {
            o.append(UInt8(ascii: "-"))
            // Int.min has no positive counterpart; its magnitude fits in a UInt.
            unsigned(UInt64(bitPattern: Int64(0 &- value)), to: &o)
        } else {
            unsigned(UInt64(value), to: &o)
        }
    }

    /// Decimal digits, written in place (last digit first) once their count is known.
    static func unsigned(_ value: UInt64, to o: inout OutputSpan<UInt8>) {
        o.append(UInt8(ascii: "0"))
        var rest = value
        while rest >= 10 {
            rest /= 10
            o.append(UInt8(ascii: "0"))
        }
        var digits = o.mutableSpan
        var at = digits.count
        var v = value
        repeat {
            at -= 1
            digits[at] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        } while v > 0
    }

    /// Milliseconds with three decimals, from microseconds: `12.345`, `0.042`.
    static func milliseconds(micros: Int, to o: inout OutputSpan<UInt8>) {
        let m = max(0, micros)
        unsigned(UInt64(m / 1000), to: &o)
        let frac = m % 1000
        o.append(UInt8(ascii: "."))
        o.append(UInt8(ascii: "0") + UInt8(frac / 100))
        o.append(UInt8(ascii: "0") + UInt8(frac / 10 % 10))
        o.append(UInt8(ascii: "0") + UInt8(frac % 10))
    }
}

/// A log line built piece by piece in a growing array (swift-log's lines and the sinks' own
/// warnings, whose members are not known ahead): each piece reserves its `JSONText` bound.
/// The access log, which knows its members, writes a whole line at once (`AccessLogLine`).
struct JSONLineBytes {
    var bytes: [UInt8]
    /// The clock text of the buffer's lines, cached per millisecond.
    var time = LogTimestamp()

    init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func head() {
        bytes.append(addingCapacity: JSONText.headBound) { JSONText.head(time: &time, to: &$0) }
    }

    mutating func key(_ key: StaticString) {
        bytes.append(addingCapacity: key.utf8CodeUnitCount + 4) { JSONText.key(key, to: &$0) }
    }

    /// A key that comes from elsewhere (swift-log metadata): escaped like any string.
    mutating func key(escaping key: String) {
        bytes.append(UInt8(ascii: ","))
        string(key)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Text of the log's own (a literal), copied as it is.
    mutating func raw(_ text: StaticString) {
        bytes.append(addingCapacity: text.utf8CodeUnitCount) { $0.append(text) }
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
        bytes.append(addingCapacity: JSONText.stringBound(value.count)) { JSONText.string(utf8: value, to: &$0) }
    }

    mutating func int(_ value: Int) {
        bytes.append(addingCapacity: JSONText.numberBound) { JSONText.int(value, to: &$0) }
    }

    mutating func milliseconds(micros: Int) {
        bytes.append(addingCapacity: JSONText.numberBound) { JSONText.milliseconds(micros: micros, to: &$0) }
    }

    mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    mutating func null() { raw("null") }
}
