/// The field lines of one header or trailer section, in order, names case-preserved
/// (RFC 9110 §5.3: order of same-named fields matters; names compare case-insensitively).
///
/// Kept as the section's bytes in one array plus one index span per field, so a parsed head
/// costs two allocations whatever its field count, and a field is a view into those bytes.
/// Values are stored without their leading and trailing OWS (RFC 9112 §5.1).
public struct HTTP1Fields: Sendable, RandomAccessCollection, Equatable, CustomStringConvertible {
    struct Span: Sendable {
        var nameStart: Int
        var nameEnd: Int
        var valueStart: Int
        var valueEnd: Int
    }

    /// The section's bytes (for a request head, also its request line).
    var storage: [UInt8]
    var spans: [Span]

    init(storage: [UInt8], spans: [Span]) {
        self.storage = storage
        self.spans = spans
    }

    /// No fields.
    public init() { self.init(storage: [], spans: []) }

    /// Fields from (name, value) pairs, unchecked: for tests and for building messages.
    public init(_ pairs: [(name: String, value: String)]) {
        var storage: [UInt8] = []
        var spans: [Span] = []
        for (name, value) in pairs {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            spans.append(
                Span(nameStart: nameStart, nameEnd: valueStart, valueStart: valueStart, valueEnd: storage.count))
        }
        self.init(storage: storage, spans: spans)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { spans.count }

    public subscript(position: Int) -> HTTP1Field {
        let span = spans[position]
        return HTTP1Field(
            nameBytes: storage[span.nameStart..<span.nameEnd],
            valueBytes: storage[span.valueStart..<span.valueEnd])
    }

    /// The value of the first field named `name` (ASCII case-insensitive), if any.
    public func first(_ name: String) -> String? {
        var found: String?
        forEachIndex(named: name) { i in
            if found == nil { found = String(decoding: valueBytes(i), as: UTF8.self) }
        }
        return found
    }

    /// Calls `body` with the index of each field named `name` (ASCII case-insensitive),
    /// comparing in place: no allocation per lookup (the request path makes a dozen).
    func forEachIndex(named name: String, _ body: (Int) -> Void) {
        HTTP1Bytes.withUTF8(name) { wanted in
            storage.withUnsafeBufferPointer { all in
                for (i, span) in spans.enumerated() where span.nameEnd - span.nameStart == wanted.count {
                    var same = true
                    for k in 0..<wanted.count {
                        let a = all[span.nameStart + k]
                        let b = wanted[k]
                        let fa = (a >= 0x41 && a <= 0x5A) ? a | 0x20 : a
                        let fb = (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
                        if fa != fb {
                            same = false
                            break
                        }
                    }
                    if same { body(i) }
                }
            }
        }
    }

    /// Same fields, same order, same bytes (where the bytes sit in storage does not matter).
    public static func == (a: HTTP1Fields, b: HTTP1Fields) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0 == $1 }
    }

    public var description: String {
        "[" + map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }

    func nameEquals(_ index: Int, _ lowercase: StaticString) -> Bool {
        let span = spans[index]
        // Most names differ in length: no slice, no retain of the storage for those.
        guard span.nameEnd - span.nameStart == lowercase.utf8CodeUnitCount else { return false }
        return storage.withUnsafeBufferPointer {
            HTTP1Bytes.equalsLowercase(UnsafeBufferPointer(rebasing: $0[span.nameStart..<span.nameEnd]), lowercase)
        }
    }

    func valueBytes(_ index: Int) -> ArraySlice<UInt8> {
        let span = spans[index]
        return storage[span.valueStart..<span.valueEnd]
    }
}

/// One field line: a view into its section's bytes.
public struct HTTP1Field: Sendable, Equatable {
    /// The name as received (case preserved).
    public let nameBytes: ArraySlice<UInt8>
    /// The value without leading and trailing OWS; may hold obs-text (bytes ≥ 0x80).
    public let valueBytes: ArraySlice<UInt8>

    public var name: String { String(decoding: nameBytes, as: UTF8.self) }
    /// The value as UTF-8 (invalid sequences replaced); use `valueBytes` for the exact bytes.
    public var value: String { String(decoding: valueBytes, as: UTF8.self) }
}
