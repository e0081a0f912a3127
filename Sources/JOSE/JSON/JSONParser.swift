/// A strict RFC 8259 parser for JOSE headers, claims and JWKs: duplicate member names,
/// trailing commas, comments, NaN/Infinity, leading zeros, lone surrogates, raw control
/// characters and trailing content are all errors. Nesting is limited (stack safety).
public enum JSONParser {
    public static let maxDepth = 32

    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { try parse(buffer: $0) }
    }

    public static func parse(_ text: String) throws -> JSONValue { try parse(Array(text.utf8)) }

    public static func parse(buffer: UnsafeBufferPointer<UInt8>) throws -> JSONValue {
        try plainStringByte.withUnsafeBufferPointer { plain in
            var p = Parser(b: buffer, plain: plain)
            p.skipWS()
            let v = try p.value(depth: 0)
            p.skipWS()
            guard p.i == buffer.count else { throw p.fail("trailing content after the JSON value") }
            return v
        }
    }

    /// Parses and requires an object (a JOSE header or claims set must be one).
    public static func parseObject(_ bytes: [UInt8], what: String) throws -> JSONObject {
        guard case .object(let o) = try parse(bytes) else {
            throw JOSEError(.malformed, "\(what) is not a JSON object")
        }
        return o
    }

    /// 1 for a byte that stands for itself inside a string (not '"', '\\' or a control
    /// character, RFC 8259 §7), else 0.
    static let plainStringByte: [UInt8] = (0..<256).map { c in
        c < 0x20 || c == Int(UInt8(ascii: "\"")) || c == Int(UInt8(ascii: "\\")) ? 0 : 1
    }

    struct Parser {
        let b: UnsafeBufferPointer<UInt8>
        /// `plainStringByte`, borrowed for the whole parse.
        let plain: UnsafeBufferPointer<UInt8>
        var i = 0

        func fail(_ why: String) -> JOSEError { JOSEError(.malformed, "invalid JSON at byte \(i): \(why)") }

        @inline(__always)
        mutating func skipWS() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0a || b[i] == 0x0d { i += 1 }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth <= JSONParser.maxDepth else { throw fail("nested too deeply") }
            guard i < b.count else { throw fail("unexpected end") }
            switch b[i] {
            case UInt8(ascii: "{"): return .object(try object(depth: depth))
            case UInt8(ascii: "["): return .array(try array(depth: depth))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let n = word.utf8CodeUnitCount
            guard i + n <= b.count else { throw fail("unexpected end") }
            for k in 0..<n where b[i + k] != word.utf8Start[k] { throw fail("unexpected character") }
            i += n
        }

        mutating func object(depth: Int) throws -> JSONObject {
            i += 1
            var obj = JSONObject(minimumCapacity: 12)
            skipWS()
            if i < b.count, b[i] == UInt8(ascii: "}") {
                i += 1
                return obj
            }
            while true {
                skipWS()
                guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let name = try memberName()
                skipWS()
                guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipWS()
                let v = try value(depth: depth + 1)
                guard obj.insertNew(name, v) else {
                    let text = name.text
                    throw JOSEError(.duplicateMember, claim: text, "member \"\(text)\" appears more than once")
                }
                skipWS()
                guard i < b.count else { throw fail("unexpected end") }
                if b[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                if b[i] == UInt8(ascii: "}") {
                    i += 1
                    return obj
                }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws -> [JSONValue] {
            i += 1
            var out: [JSONValue] = []
            skipWS()
            if i < b.count, b[i] == UInt8(ascii: "]") {
                i += 1
                return out
            }
            while true {
                skipWS()
                out.append(try value(depth: depth + 1))
                skipWS()
                guard i < b.count else { throw fail("unexpected end") }
                if b[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                if b[i] == UInt8(ascii: "]") {
                    i += 1
                    return out
                }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard i + 4 <= b.count else { throw fail("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[i]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: throw fail("bad \\u escape")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }

        /// Skips the bytes of a string that stand for themselves, from just after its opening
        /// quote; returns where they start and whether one of them is not ASCII (their high
        /// bits gathered on the way, so ASCII text needs no second pass to be known valid).
        @inline(__always)
        mutating func plainRun() -> (start: Int, ascii: Bool) {
            i += 1
            let start = i
            var j = i
            let highs: UInt64 = 0x8080_8080_8080_8080
            var high: UInt64 = 0
            if let base = b.baseAddress {
                // Eight bytes at a time: a string's text is most of a message's bytes, and a
                // byte at a time was seven instructions each.
                while j + 8 <= b.count {
                    let word = UInt64(littleEndian: UnsafeRawPointer(base + j).loadUnaligned(as: UInt64.self))
                    let ends = Self.notPlain(word)
                    if ends != 0 {
                        // The text's byte k is the word's bits 8k..<8k+8; the lowest flagged
                        // byte is the first that is not plain.
                        let k = ends.trailingZeroBitCount / 8
                        high |= word & ((1 << UInt64(8 * k)) &- 1)
                        i = j + k
                        return (start, high & highs == 0)
                    }
                    high |= word
                    j += 8
                }
            }
            // The last bytes of the text, fewer than eight.
            var tail: UInt8 = 0
            while j < b.count, plain[Int(b[j])] != 0 {
                tail |= b[j]
                j += 1
            }
            i = j
            return (start, high & highs == 0 && tail < 0x80)
        }

        /// The high bit of each byte of `word` that is not plain (`plainStringByte`): a quote,
        /// a backslash or a control character (RFC 8259 §7); a byte above a flagged one may be
        /// flagged too (a borrow), never one below it. A byte equal to c is a zero byte of
        /// `word ^ c·ones`, and a zero byte, or one below n ≤ 0x80, sets its high bit in
        /// `(x - n·ones) & ~x`.
        @inline(__always)
        static func notPlain(_ word: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let found =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            return found & 0x8080_8080_8080_8080
        }

        /// A member name: as `string()`, except that a short ASCII name without escapes is
        /// packed into a `JSONObject.Name` without making a `String`.
        mutating func memberName() throws -> JSONObject.Name {
            let save = i
            let (start, ascii) = plainRun()
            if i < b.count, b[i] == UInt8(ascii: "\""), ascii {
                let name = JSONObject.Name(bytes: UnsafeBufferPointer(rebasing: b[start..<i]))
                i += 1
                return name
            }
            i = save
            return JSONObject.Name(try string())
        }

        mutating func string() throws -> String {
            // Fast path: no escapes.
            let (start, ascii) = plainRun()
            guard i < b.count else { throw fail("unterminated string") }
            if b[i] == UInt8(ascii: "\"") {
                let bytes = UnsafeBufferPointer(rebasing: b[start..<i])
                let s = ascii ? String(decoding: bytes, as: UTF8.self) : try utf8(bytes)
                i += 1
                return s
            }
            var out = Array(b[start..<i])
            while true {
                guard i < b.count else { throw fail("unterminated string") }
                let c = b[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    break
                }
                if c < 0x20 { throw fail("control character in string") }
                if c != UInt8(ascii: "\\") {
                    out.append(c)
                    i += 1
                    continue
                }
                i += 1
                guard i < b.count else { throw fail("unterminated escape") }
                let e = b[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5c)
                case UInt8(ascii: "/"): out.append(0x2f)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar <= 0xDBFF {
                        guard i + 1 < b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                            throw fail("lone high surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low <= 0xDFFF else { throw fail("bad low surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                        throw fail("lone low surrogate")
                    }
                    out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
                default: throw fail("bad escape")
                }
            }
            return try out.withUnsafeBufferPointer { try utf8($0) }
        }

        func utf8(_ bytes: UnsafeBufferPointer<UInt8>) throws -> String {
            // Nearly every JOSE string is ASCII, which is valid UTF-8 as it stands; only the
            // rest pays for the (generic, unspecialized) validating initializer.
            var high: UInt8 = 0
            for b in bytes { high |= b }
            if high < 0x80 { return String(decoding: bytes, as: UTF8.self) }
            guard let s = String(validating: bytes, as: UTF8.self) else { throw fail("invalid UTF-8") }
            return s
        }

        mutating func number() throws -> String {
            let start = i
            try skipNumber()
            return String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        }

        /// Steps over a number (RFC 8259 §6), refusing what its grammar does not allow.
        mutating func skipNumber() throws {
            if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, b[i] >= 0x30, b[i] <= 0x39 else { throw fail("unexpected character") }
            if b[i] == 0x30 {
                i += 1
                if i < b.count, b[i] >= 0x30, b[i] <= 0x39 { throw fail("leading zero") }
            } else {
                while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            }
            if i < b.count, b[i] == UInt8(ascii: ".") {
                i += 1
                guard i < b.count, b[i] >= 0x30, b[i] <= 0x39 else { throw fail("digit expected after '.'") }
                while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            }
            if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
                i += 1
                if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
                guard i < b.count, b[i] >= 0x30, b[i] <= 0x39 else { throw fail("digit expected in exponent") }
                while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            }
        }
    }
}
