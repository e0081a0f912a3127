/// A JSON object with unique member names, in document order.
///
/// Members are kept in one array, in order. A JOSE header or claims set has about a dozen
/// members with short ASCII names (`iss`, `sub`, `aud`, `exp`, `client_id`): such a name is
/// kept as its bytes packed in two words (`Name`), so parsing makes no `String` for it and
/// finding a member compares two words per member — less than hashing the name. Past
/// `indexedFrom` members a dictionary index takes over (it hashes with the process's random
/// seed), so a token stuffed with thousands of members costs a hash per member, not a scan.
///
/// Names are equal as Swift strings are: by Unicode canonical equivalence, so "e\u0301" and
/// "é" are one name (a duplicate), as they were when members lived in a dictionary. Packed
/// names are ASCII, and ASCII names are canonically equivalent exactly when their bytes are
/// equal; a name that is not ASCII ("\u212A", the Kelvin sign, equals "K") or is longer
/// than 15 bytes is kept as a `String` and compared as one.
public struct JSONObject: Equatable, Sendable {
    struct Member: Equatable, Sendable {
        let name: Name
        var value: JSONValue
    }

    /// The members in document order.
    private(set) var members: [Member] = []
    /// Name → position in `members`, once there are `indexedFrom` members or more.
    private var index: [String: Int]?
    /// Some member's name is kept as a `String` (words alone cannot decide equality then).
    private var hasTextName = false

    /// From this many members on, lookups go through a dictionary.
    static let indexedFrom = 32

    public init() {}

    /// Equal when the members are, in order (as when names and values were kept apart); the
    /// index and `hasTextName` are lookup aids, stale after a removal, and not compared.
    public static func == (a: JSONObject, b: JSONObject) -> Bool { a.members == b.members }

    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        for (k, v) in pairs { self[k] = v }
    }

    /// Room for `minimumCapacity` members without regrowing.
    init(minimumCapacity: Int) {
        members.reserveCapacity(minimumCapacity)
    }

    public var names: [String] { members.map(\.name.text) }
    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }

    public subscript(name: String) -> JSONValue? {
        get { position(of: Name(name)).map { members[$0].value } }
        set { set(Name(name), newValue) }
    }

    /// As `self[name]`, for a name prepared once (the claims read on every request).
    public subscript(name: Name) -> JSONValue? {
        position(of: name).map { members[$0].value }
    }

    /// Each member, in document order.
    public func forEach(_ body: (String, JSONValue) throws -> Void) rethrows {
        for m in members { try body(m.name.text, m.value) }
    }

    func position(of name: Name) -> Int? {
        if let index { return index[name.text] }
        var i = 0
        if !hasTextName {
            // Every member's name is packed: only a packed name, or a string that is not
            // ASCII (which may be canonically equivalent to ASCII), can be one of them.
            if name.string == nil {
                while i < members.count {
                    if members[i].name.low == name.low && members[i].name.high == name.high { return i }
                    i += 1
                }
                return nil
            }
            if name.isASCIIString { return nil }
        }
        do {
            while i < members.count {
                if members[i].name == name { return i }
                i += 1
            }
        }
        return nil
    }

    private mutating func set(_ name: Name, _ value: JSONValue?) {
        if let at = position(of: name) {
            if let value {
                members[at].value = value
            } else {
                members.remove(at: at)
                if index != nil { rebuildIndex() }
            }
        } else if let value {
            append(name, value)
        }
    }

    /// Adds a member; false, leaving the object as it was, if the name is already there
    /// (the parser's duplicate check).
    mutating func insertNew(_ name: consuming Name, _ value: consuming JSONValue) -> Bool {
        guard position(of: name) == nil else { return false }
        append(name, value)
        return true
    }

    private mutating func append(_ name: consuming Name, _ value: consuming JSONValue) {
        if name.string != nil { hasTextName = true }
        if index != nil { index?[name.text] = members.count }
        members.append(Member(name: name, value: value))
        if index == nil && members.count >= Self.indexedFrom {
            rebuildIndex()
        }
    }

    private mutating func rebuildIndex() {
        guard members.count >= Self.indexedFrom else {
            index = nil
            return
        }
        var built: [String: Int] = [:]
        built.reserveCapacity(members.count)
        for (i, m) in members.enumerated() { built[m.name.text] = i }
        index = built
    }
}

extension JSONObject {
    /// A member name, made ready for comparison. An ASCII name of at most 15 bytes is held
    /// as its bytes: `low` has bytes 0–6 and the length in the top byte, `high` bytes 7–14,
    /// zero-padded (the length tells "a" from "a\u0000"). Any other name is held as a
    /// `String` (and `low` says whether that one is ASCII).
    public struct Name: Equatable, Sendable {
        let low: UInt64
        let high: UInt64
        /// The name, when it is not packed into the two words.
        let string: String?

        public init(_ text: String) {
            var copy = text
            (low, high, string) = copy.withUTF8 { Self.pack($0) } ?? (Self.isASCII(text) ? 1 : 0, 0, text)
        }

        /// A name straight from the bytes of its JSON text (no escapes in them, valid UTF-8).
        init(bytes: UnsafeBufferPointer<UInt8>) {
            if let packed = Self.pack(bytes) {
                (low, high, string) = packed
            } else {
                let text = String(decoding: bytes, as: UTF8.self)
                (low, high, string) = (Self.isASCII(text) ? 1 : 0, 0, text)
            }
        }

        /// A name held as a string that is ASCII: never equal to a packed one (those are
        /// ASCII too, and shorter).
        var isASCIIString: Bool { string != nil && low == 1 }

        static func isASCII(_ text: String) -> Bool {
            var text = text
            return text.withUTF8 { b in b.allSatisfy { $0 < 0x80 } }
        }

        static func pack(_ b: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, String?)? {
            guard b.count <= 15 else { return nil }
            var low = UInt64(b.count) << 56
            var high: UInt64 = 0
            var bits: UInt8 = 0
            for i in 0..<b.count {
                bits |= b[i]
                if i < 7 {
                    low |= UInt64(b[i]) << (8 * UInt64(i))
                } else {
                    high |= UInt64(b[i]) << (8 * UInt64(i - 7))
                }
            }
            return bits < 0x80 ? (low, high, nil) : nil
        }

        /// The name as a string.
        public var text: String {
            if let string { return string }
            let n = Int(low >> 56)
            return String(unsafeUninitializedCapacity: n) { out in
                for i in 0..<n {
                    out[i] = UInt8(truncatingIfNeeded: i < 7 ? low >> (8 * UInt64(i)) : high >> (8 * UInt64(i - 7)))
                }
                return n
            }
        }

        public static func == (a: Name, b: Name) -> Bool {
            switch (a.string, b.string) {
            case (nil, nil): return a.low == b.low && a.high == b.high
            case (let x?, let y?): return x == y
            default: return !a.isASCIIString && !b.isASCIIString && a.text == b.text
            }
        }
    }
}
