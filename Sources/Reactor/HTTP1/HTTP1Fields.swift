/// The field lines of one header or trailer section, in order, names case-preserved
/// (RFC 9110 §5.3: order of same-named fields matters; names compare case-insensitively).
///
/// Kept as the section's bytes and one span per field in a single buffer
/// (`HTTP1FieldBuffer`): a parsed head costs one allocation whatever its field count, and a
/// field is a view into those bytes. Values are stored without their leading and trailing
/// OWS (RFC 9112 §5.1). The bytes may hold more than the fields (a parsed head keeps its
/// start line and line ends; a filtered section keeps what it dropped): only spans say what
/// a field is.
public struct HTTP1Fields: Sendable, RandomAccessCollection, Equatable, CustomStringConvertible {
    /// Where one field's name and value are in the section's bytes. Offsets are stored in
    /// 32 bits (a section is bounded far below that), so a span is 16 bytes.
    struct Span: Sendable {
        private let offsets: (UInt32, UInt32, UInt32, UInt32)

        /// Offsets within a buffer, whose capacity `HTTP1FieldBuffer.make` keeps below 4 GiB.
        init(nameStart: Int, nameEnd: Int, valueStart: Int, valueEnd: Int) {
            offsets = (
                UInt32(truncatingIfNeeded: nameStart), UInt32(truncatingIfNeeded: nameEnd),
                UInt32(truncatingIfNeeded: valueStart), UInt32(truncatingIfNeeded: valueEnd)
            )
        }

        var nameStart: Int { Int(offsets.0) }
        var nameEnd: Int { Int(offsets.1) }
        var valueStart: Int { Int(offsets.2) }
        var valueEnd: Int { Int(offsets.3) }
    }

    /// nil: no fields and no bytes (no allocation). `nonisolated(unsafe)`: a managed buffer
    /// cannot be declared Sendable, but this one is never changed while shared (copy on
    /// write, as an array's storage), so copies may cross threads.
    nonisolated(unsafe) var buffer: HTTP1FieldBuffer?

    init(buffer: HTTP1FieldBuffer?) { self.buffer = buffer }

    /// No fields.
    public init() { buffer = nil }

    /// Fields from (name, value) pairs, unchecked: for tests and for building messages.
    public init(_ pairs: [(name: String, value: String)]) {
        buffer = nil
        var bytes = 0
        for (name, value) in pairs { bytes += name.utf8.count + value.utf8.count }
        reserveCapacity(bytes: bytes, fields: pairs.count)
        for (name, value) in pairs { append(name, value) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { buffer?.counts.pointee.spanCount ?? 0 }
    /// Bytes held (at least every field's name and value).
    var byteCount: Int { buffer?.counts.pointee.byteCount ?? 0 }

    @inline(__always)
    func span(_ index: Int) -> Span {
        precondition(index >= 0 && index < count, "field index out of range")
        return buffer.unsafelyUnwrapped.span(index)
    }

    /// Calls `body` with the section's bytes (spans index into them).
    ///
    /// The buffer is read through `self`, not bound to a local: the caller keeps `self`, and
    /// so the buffer, alive for the whole call. A local (with its lifetime extended over
    /// `body`) cost an atomic retain and release per call, several calls per request.
    @inline(__always)
    func withBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        guard buffer != nil else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(
            UnsafeBufferPointer(
                start: buffer.unsafelyUnwrapped.bytes, count: buffer.unsafelyUnwrapped.counts.pointee.byteCount))
    }

    /// Calls `body` with the section's bytes and its spans, in place: for loops over every
    /// field on the request path.
    @inline(__always)
    func withBytesAndSpans<R, E: Error>(
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<Span>) throws(E) -> R
    ) throws(E) -> R {
        // Read through `self`, as in `withBytes`.
        guard buffer != nil else {
            return try body(UnsafeBufferPointer(start: nil, count: 0), UnsafeBufferPointer(start: nil, count: 0))
        }
        return try body(
            UnsafeBufferPointer(
                start: buffer.unsafelyUnwrapped.bytes, count: buffer.unsafelyUnwrapped.counts.pointee.byteCount),
            buffer.unsafelyUnwrapped.spans)
    }

    /// The bytes in `range` (a target or reason phrase that a head keeps in its bytes).
    func bytes(_ range: Range<Int>) -> ArraySlice<UInt8> {
        withBytes { Array($0[range])[...] }
    }

    public subscript(position: Int) -> HTTP1Field {
        let s = span(position)
        return withBytes { all in
            HTTP1Field(
                nameBytes: Array(all[s.nameStart..<s.nameEnd])[...],
                valueBytes: Array(all[s.valueStart..<s.valueEnd])[...])
        }
    }

    /// The value of the first field named `name` (ASCII case-insensitive), if any.
    public func first(_ name: String) -> String? {
        var found: String?
        forEachMatch(named: name) { _, value in
            if found == nil { found = String(decoding: value, as: UTF8.self) }
        }
        return found
    }

    /// Calls `body` with the index of each field named `name` (ASCII case-insensitive),
    /// comparing in place: no allocation per lookup (the request path makes a dozen).
    func forEachIndex(named name: String, _ body: (Int) -> Void) {
        forEachMatch(named: name) { i, _ in body(i) }
    }

    /// Calls `body` with the index and the value bytes of each field named `name` (ASCII
    /// case-insensitive). The bytes and spans are taken first and the name's bytes inside,
    /// so no closure here captures `self`; callers get the value with the index rather than
    /// reading it again through `self` (a capture of `self` retained its buffer, atomically,
    /// on every lookup).
    @inline(__always)
    func forEachMatch(named name: String, _ body: (Int, UnsafeBufferPointer<UInt8>) -> Void) {
        withBytesAndSpans { all, spans in
            HTTP1Bytes.withUTF8(name) { wanted in
                for i in 0..<spans.count {
                    let s = spans[i]
                    guard s.nameEnd - s.nameStart == wanted.count else { continue }
                    var same = true
                    for k in 0..<wanted.count
                    where HTTP1Fields.lower(all[s.nameStart + k]) != HTTP1Fields.lower(wanted[k]) {
                        same = false
                        break
                    }
                    if same { body(i, UnsafeBufferPointer(rebasing: all[s.valueStart..<s.valueEnd])) }
                }
            }
        }
    }

    /// Same fields, same order, same bytes (where the bytes sit in storage does not matter).
    public static func == (a: HTTP1Fields, b: HTTP1Fields) -> Bool {
        guard a.count == b.count else { return false }
        return a.withBytes { x in
            b.withBytes { y in
                (0..<a.count).allSatisfy { i in
                    let s = a.span(i)
                    let t = b.span(i)
                    return x[s.nameStart..<s.nameEnd].elementsEqual(y[t.nameStart..<t.nameEnd])
                        && x[s.valueStart..<s.valueEnd].elementsEqual(y[t.valueStart..<t.valueEnd])
                }
            }
        }
    }

    public var description: String {
        "[" + map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }

    func nameEquals(_ index: Int, _ lowercase: StaticString) -> Bool {
        let s = span(index)
        // Most names differ in length: no byte is looked at for those.
        guard s.nameEnd - s.nameStart == lowercase.utf8CodeUnitCount, let buffer else { return false }
        return withExtendedLifetime(buffer) {
            HTTP1Bytes.equalsLowercase(
                UnsafeBufferPointer(start: buffer.bytes + s.nameStart, count: s.nameEnd - s.nameStart), lowercase)
        }
    }

    /// Calls `body` with the value bytes of the field at `index`, in place.
    func withValue<R, E: Error>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        let s = span(index)
        return try withBytes { (all) throws(E) -> R in
            try body(UnsafeBufferPointer(rebasing: all[s.valueStart..<s.valueEnd]))
        }
    }

    @inline(__always)
    public static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
}

/// One field line: a copy of its name and value bytes.
public struct HTTP1Field: Sendable, Equatable {
    /// The name as received (case preserved).
    public let nameBytes: ArraySlice<UInt8>
    /// The value without leading and trailing OWS; may hold obs-text (bytes ≥ 0x80).
    public let valueBytes: ArraySlice<UInt8>

    public var name: String { String(decoding: nameBytes, as: UTF8.self) }
    /// The value as UTF-8 (invalid sequences replaced); use `valueBytes` for the exact bytes.
    public var value: String { String(decoding: valueBytes, as: UTF8.self) }
}
