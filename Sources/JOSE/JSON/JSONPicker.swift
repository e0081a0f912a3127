import Glibc

/// Reads a JSON text as strictly as `JSONParser` does — its grammar and every refusal of it:
/// duplicate member names at any depth (by the same equality of names), nesting past
/// `JSONParser.maxDepth`, invalid UTF-8, trailing content — but builds no tree. It keeps
/// only the values at a few member paths from the top-level object.
///
/// For a message read once per request for a handful of members, where building the tree
/// and releasing it are most of the cost: an MCP POST is judged by its `method`, the tool it
/// names and the revision in its `_meta`, while its `arguments` may be large.
public struct JSONPicker: Sendable {
    /// How many plain member names the duplicate check keeps on the stack, for all the
    /// objects open at once; an object that finds it full keeps its names in a set instead,
    /// as one with `JSONObject.indexedFrom` members does.
    static let seenCapacity = 64

    /// What stands at a path: a scalar's value, or only the kind of a container.
    public enum Picked: Equatable, Sendable {
        case string(String)
        /// The number's text, as `JSONValue.number` holds it.
        case number(String)
        case bool(Bool)
        case null
        case object
        case array
    }

    /// What one text holds: the top-level value's kind (a scalar's value) and, per path in
    /// the order given, its value; nil where the path leads nowhere.
    public struct Reading: Sendable {
        public let top: Picked
        public let values: [Picked?]
    }

    /// The paths' member names, end to end.
    let nameBytes: [UInt8]
    /// Path k's name d is at `table[3 * (k * width + d)]`, its length in the next slot, and
    /// whether it is ASCII (compared byte for byte with a plain name, else as a string) in
    /// the third.
    let table: [Int]
    /// The number of names in each path.
    let lengths: [Int]
    /// The longest path's length: the table's row width.
    let width: Int
    /// Per depth d, the paths whose name d is ASCII and `k` bytes long (`byLength[64 * d + k]`,
    /// 63 for any longer), and those whose name d begins with byte `c` (`byFirst[256 * d + c]`):
    /// a member's name is compared only with the paths in both, so a name that leads nowhere
    /// costs two loads, not a compare per path.
    /// And per depth, the paths whose name there is not ASCII: always compared, as strings
    /// (`unplain[d]`). The three end to end in `masks`, read through one pointer.
    let masks: [UInt64]

    /// - paths: at most 64, none empty.
    public init(paths: [[String]]) {
        precondition(paths.count <= 64 && paths.allSatisfy { !$0.isEmpty }, "JSONPicker: 1 to 64 non-empty paths")
        width = paths.map(\.count).max() ?? 0
        var bytes: [UInt8] = []
        var table = [Int](repeating: 0, count: 3 * paths.count * width)
        var byLength = [UInt64](repeating: 0, count: 64 * width)
        var byFirst = [UInt64](repeating: 0, count: 256 * width)
        var unplain = [UInt64](repeating: 0, count: width)
        for (k, path) in paths.enumerated() {
            for (d, name) in path.enumerated() {
                let ascii = name.utf8.allSatisfy { $0 < 0x80 }
                table[3 * (k * width + d)] = bytes.count
                table[3 * (k * width + d) + 1] = name.utf8.count
                table[3 * (k * width + d) + 2] = ascii ? 1 : 0
                bytes += name.utf8
                let bit: UInt64 = 1 << UInt64(k)
                guard ascii else {
                    unplain[d] |= bit
                    continue
                }
                byLength[64 * d + min(name.utf8.count, 63)] |= bit
                if let first = name.utf8.first {
                    byFirst[256 * d + Int(first)] |= bit
                } else {
                    // The empty name has no first byte: any first byte lets it through, and
                    // only an empty member name passes its length.
                    for c in 0..<256 { byFirst[256 * d + c] |= bit }
                }
            }
        }
        nameBytes = bytes
        self.table = table
        masks = byLength + byFirst + unplain
        lengths = paths.map(\.count)
    }

    public func read(_ bytes: [UInt8]) throws -> Reading {
        try bytes.withUnsafeBufferPointer { try read(buffer: $0) }
    }

    public func read(buffer: UnsafeBufferPointer<UInt8>) throws -> Reading {
        try JSONParser.plainStringByte.withUnsafeBufferPointer { plain in
            try nameBytes.withUnsafeBufferPointer { names in
                try table.withUnsafeBufferPointer { table in
                    try masks.withUnsafeBufferPointer { masks in
                        try lengths.withUnsafeBufferPointer { lengths in
                            try withUnsafeTemporaryAllocation(of: Found.self, capacity: lengths.count) { found in
                                try withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: Self.seenCapacity) {
                                    seen in
                                    found.initialize(repeating: Found(kind: .absent, start: 0, end: 0))
                                    seen.initialize(repeating: 0..<0)
                                    var walk = Walk(
                                        p: JSONParser.Parser(b: buffer, plain: plain), names: names, table: table,
                                        lengths: lengths, width: width, found: found,
                                        candidates: Candidates(masks: masks, width: width), seen: seen)
                                    walk.p.skipWS()
                                    let all: UInt64 = lengths.count == 64 ? ~0 : (1 << UInt64(lengths.count)) - 1
                                    let top = try walk.value(depth: 0, mask: all)
                                    walk.p.skipWS()
                                    guard walk.p.i == buffer.count else {
                                        throw walk.p.fail("trailing content after the JSON value")
                                    }
                                    var values: [Picked?] = []
                                    values.reserveCapacity(found.count)
                                    for f in found { values.append(try walk.picked(f)) }
                                    return Reading(top: try walk.picked(top)!, values: values)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Where a value stands in the text and what kind it is: made for every value on the
    /// way, so it holds no reference (no `String` until the walk is over).
    fileprivate struct Found {
        /// `plainString`: a string without escapes (its bytes, checked, are its text).
        enum Kind: UInt8 { case absent, string, plainString, number, `true`, `false`, null, object, array }
        var kind: Kind
        /// A string's opening quote, a number's first byte.
        var start: Int
        /// Just past a number's last byte.
        var end: Int
    }

    /// The picker's `masks`, for one walk.
    fileprivate struct Candidates {
        let masks: UnsafeBufferPointer<UInt64>
        let width: Int

        /// The paths of `mask` whose name at `depth` may be the plain name at `range` of `b`.
        func of(_ range: Range<Int>, in b: UnsafeBufferPointer<UInt8>, depth: Int, mask: UInt64) -> UInt64 {
            let first = range.isEmpty ? 0 : Int(b[range.lowerBound])
            let plain = masks[64 * depth + min(range.count, 63)] & masks[64 * width + 256 * depth + first]
            return mask & (plain | masks[320 * width + depth])
        }
    }

    /// One pass over one text. `mask` has a bit set for each path whose names so far are
    /// the members the walk went through; at an object of depth d it compares each member's
    /// name with those paths' name d (only objects lead along a path, so depth is also the
    /// path's position).
    private struct Walk {
        var p: JSONParser.Parser
        let names: UnsafeBufferPointer<UInt8>
        let table: UnsafeBufferPointer<Int>
        let lengths: UnsafeBufferPointer<Int>
        let width: Int
        let found: UnsafeMutableBufferPointer<Found>
        let candidates: Candidates
        /// The plain names (ASCII, no escapes: their bytes are their text) of the objects
        /// open now, innermost last: the duplicate check's. A stack in the reader's frame,
        /// `seenCount` deep: an object's end drops its names by setting the count back.
        let seen: UnsafeMutableBufferPointer<Range<Int>>
        var seenCount = 0
        /// The other names of the objects open now, decoded.
        var others: [String] = []

        init(
            p: JSONParser.Parser, names: UnsafeBufferPointer<UInt8>, table: UnsafeBufferPointer<Int>,
            lengths: UnsafeBufferPointer<Int>, width: Int, found: UnsafeMutableBufferPointer<Found>,
            candidates: Candidates, seen: UnsafeMutableBufferPointer<Range<Int>>
        ) {
            self.p = p
            self.names = names
            self.table = table
            self.lengths = lengths
            self.width = width
            self.found = found
            self.candidates = candidates
            self.seen = seen
        }

        /// What a found value is, its strings made now.
        func picked(_ f: Found) throws -> Picked? {
            switch f.kind {
            case .absent: return nil
            case .string:
                var again = p
                again.i = f.start
                return .string(try again.string())
            case .plainString:
                // Between the quotes, checked as UTF-8 on the way (skipString).
                return .string(
                    String(decoding: UnsafeBufferPointer(rebasing: p.b[(f.start + 1)..<(f.end - 1)]), as: UTF8.self))
            case .number:
                return .number(String(decoding: UnsafeBufferPointer(rebasing: p.b[f.start..<f.end]), as: UTF8.self))
            case .true: return .bool(true)
            case .false: return .bool(false)
            case .null: return .null
            case .object: return .object
            case .array: return .array
            }
        }

        /// Steps over one value.
        mutating func value(depth: Int, mask: UInt64) throws -> Found {
            guard depth <= JSONParser.maxDepth else { throw p.fail("nested too deeply") }
            guard p.i < p.b.count else { throw p.fail("unexpected end") }
            let start = p.i
            switch p.b[p.i] {
            case UInt8(ascii: "{"):
                try object(depth: depth, mask: mask)
                return Found(kind: .object, start: start, end: p.i)
            case UInt8(ascii: "["):
                try array(depth: depth)
                return Found(kind: .array, start: start, end: p.i)
            case UInt8(ascii: "\""):
                let plain = try skipString()
                return Found(kind: plain ? .plainString : .string, start: start, end: p.i)
            case UInt8(ascii: "t"):
                try p.literal("true")
                return Found(kind: .true, start: start, end: p.i)
            case UInt8(ascii: "f"):
                try p.literal("false")
                return Found(kind: .false, start: start, end: p.i)
            case UInt8(ascii: "n"):
                try p.literal("null")
                return Found(kind: .null, start: start, end: p.i)
            default:
                try p.skipNumber()
                return Found(kind: .number, start: start, end: p.i)
            }
        }

        /// Whether the plain name at `range` is path k's name d.
        func named(_ range: Range<Int>, path k: Int, at d: Int) -> Bool {
            let slot = 3 * (k * width + d)
            // A name that is not ASCII may still be canonically equivalent to an ASCII one.
            guard table[slot + 2] == 1 else { return text(range) == name(path: k, at: d) }
            guard table[slot + 1] == range.count else { return false }
            return memcmp(names.baseAddress! + table[slot], p.b.baseAddress! + range.lowerBound, range.count) == 0
        }

        /// Path k's name d, as a string (for a member name that is not plain).
        func name(path k: Int, at d: Int) -> String {
            let slot = 3 * (k * width + d)
            return String(
                decoding: UnsafeBufferPointer(rebasing: names[table[slot]..<(table[slot] + table[slot + 1])]),
                as: UTF8.self)
        }

        func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: p.b[range]), as: UTF8.self)
        }

        func bytesEqual(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
            a.count == b.count && memcmp(p.b.baseAddress! + a.lowerBound, p.b.baseAddress! + b.lowerBound, a.count) == 0
        }

        mutating func object(depth: Int, mask: UInt64) throws {
            p.i += 1
            let seenBase = seenCount
            let othersBase = others.count
            /// Every name as a string, once the object has `JSONObject.indexedFrom` members:
            /// as the parsed object does, a hash per member from there, not a scan.
            var index: Set<String>?
            p.skipWS()
            if p.i < p.b.count, p.b[p.i] == UInt8(ascii: "}") {
                p.i += 1
                return
            }
            while true {
                p.skipWS()
                guard p.i < p.b.count, p.b[p.i] == UInt8(ascii: "\"") else { throw p.fail("expected a member name") }
                // A name of ASCII bytes without escapes is its own bytes; any other is decoded
                // (as the parser does) and compared as a string, by canonical equivalence.
                let quote = p.i
                let (start, ascii) = p.plainRun()
                var plain: Range<Int>?
                var decoded: String?
                if ascii, p.i < p.b.count, p.b[p.i] == UInt8(ascii: "\"") {
                    plain = start..<p.i
                    p.i += 1
                } else {
                    p.i = quote
                    decoded = try p.string()
                }
                p.skipWS()
                guard p.i < p.b.count, p.b[p.i] == UInt8(ascii: ":") else { throw p.fail("expected ':'") }
                p.i += 1
                p.skipWS()
                var along: UInt64 = 0
                var ending: UInt64 = 0
                var rest = mask
                if let plain, rest != 0 { rest = candidates.of(plain, in: p.b, depth: depth, mask: rest) }
                while rest != 0 {
                    let k = rest.trailingZeroBitCount
                    rest &= rest - 1
                    let matches = plain.map { named($0, path: k, at: depth) } ?? (decoded! == name(path: k, at: depth))
                    if matches {
                        if lengths[k] == depth + 1 { ending |= 1 << UInt64(k) } else { along |= 1 << UInt64(k) }
                    }
                }
                let v = try value(depth: depth + 1, mask: along)
                while ending != 0 {
                    found[ending.trailingZeroBitCount] = v
                    ending &= ending - 1
                }
                // After the value, as the parser checks it: the same error for the same text.
                try remember(plain: plain, decoded: decoded, seenBase: seenBase, othersBase: othersBase, index: &index)
                p.skipWS()
                guard p.i < p.b.count else { throw p.fail("unexpected end") }
                if p.b[p.i] == UInt8(ascii: ",") {
                    p.i += 1
                    continue
                }
                if p.b[p.i] == UInt8(ascii: "}") {
                    p.i += 1
                    seenCount = seenBase
                    // One at a time: `removeLast(n)` goes through the generic replaceSubrange.
                    while others.count > othersBase { others.removeLast() }
                    return
                }
                throw p.fail("expected ',' or '}'")
            }
        }

        /// Adds a member's name to its object's, refusing one already there (RFC 8259 §4:
        /// names SHOULD be unique; JOSE and MCP readers must not differ on which one counts).
        mutating func remember(
            plain: Range<Int>?, decoded: String?, seenBase: Int, othersBase: Int, index: inout Set<String>?
        ) throws {
            if index != nil {
                guard index!.insert(decoded ?? text(plain!)).inserted else { throw duplicate(decoded ?? text(plain!)) }
                return
            }
            if let plain {
                for j in seenBase..<seenCount where bytesEqual(seen[j], plain) { throw duplicate(text(plain)) }
                if others.count > othersBase {
                    let name = text(plain)
                    for j in othersBase..<others.count where others[j] == name { throw duplicate(name) }
                }
                guard seenCount < seen.count else {
                    // The stack is full: this object's names, this one too, go to its set.
                    index = names(seenBase: seenBase, othersBase: othersBase)
                    index!.insert(text(plain))
                    return
                }
                seen[seenCount] = plain
                seenCount += 1
            } else if let decoded {
                for j in othersBase..<others.count where others[j] == decoded { throw duplicate(decoded) }
                for j in seenBase..<seenCount where text(seen[j]) == decoded { throw duplicate(decoded) }
                others.append(decoded)
            }
            if (seenCount - seenBase) + (others.count - othersBase) >= JSONObject.indexedFrom {
                index = names(seenBase: seenBase, othersBase: othersBase)
            }
        }

        /// The names the innermost object has so far, as a set, taken off the stack and the
        /// list (the object keeps its names in the set from then on).
        mutating func names(seenBase: Int, othersBase: Int) -> Set<String> {
            let set = Set(seen[seenBase..<seenCount].map(text) + others[othersBase...])
            seenCount = seenBase
            others.removeLast(others.count - othersBase)
            return set
        }

        func duplicate(_ text: String) -> JOSEError {
            JOSEError(.duplicateMember, claim: text, "member \"\(text)\" appears more than once")
        }

        mutating func array(depth: Int) throws {
            p.i += 1
            p.skipWS()
            if p.i < p.b.count, p.b[p.i] == UInt8(ascii: "]") {
                p.i += 1
                return
            }
            while true {
                p.skipWS()
                _ = try value(depth: depth + 1, mask: 0)
                p.skipWS()
                guard p.i < p.b.count else { throw p.fail("unexpected end") }
                if p.b[p.i] == UInt8(ascii: ",") {
                    p.i += 1
                    continue
                }
                if p.b[p.i] == UInt8(ascii: "]") {
                    p.i += 1
                    return
                }
                throw p.fail("expected ',' or ']'")
            }
        }

        /// Steps over a string, checking it as `JSONParser.Parser.string()` does. One without
        /// escapes makes no `String`; one with them is rare enough to be decoded. Returns
        /// whether it had no escapes (its bytes are its text).
        mutating func skipString() throws -> Bool {
            let opening = p.i
            let (start, ascii) = p.plainRun()
            guard p.i < p.b.count else { throw p.fail("unterminated string") }
            if p.b[p.i] == UInt8(ascii: "\"") {
                if !ascii, !Self.isUTF8(UnsafeBufferPointer(rebasing: p.b[start..<p.i])) {
                    throw p.fail("invalid UTF-8")
                }
                p.i += 1
                return true
            }
            p.i = opening
            _ = try p.string()
            return false
        }

        /// Whether `bytes` are well-formed UTF-8 (Unicode §3.9, as `String(validating:)`
        /// decides), without making a string of them.
        static func isUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var input = bytes.makeIterator()
            var decoder = Unicode.UTF8.ForwardParser()
            while true {
                switch decoder.parseScalar(from: &input) {
                case .valid: continue
                case .emptyInput: return true
                case .error: return false
                }
            }
        }
    }
}
