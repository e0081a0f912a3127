/// Reading fields by name and building field sections (a response head, an upstream
/// request head). Building appends to the one buffer, so a section of any size costs one
/// allocation (and a copy only if it grows past the room reserved, or is shared).
extension HTTP1Fields {
    /// Every value of fields named `name` (ASCII case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        var out: [String] = []
        forEachMatch(named: name) { _, value in out.append(String(decoding: value, as: UTF8.self)) }
        return out
    }

    /// Calls `body` with the value bytes of each field named `name` (ASCII case-insensitive),
    /// in order, without copying them.
    public func forEachValue(named name: String, _ body: (Swift.Span<UInt8>) -> Void) {
        forEachMatch(named: name) { _, value in body(Swift.Span(_unsafeElements: value)) }
    }

    /// The value of the first field named `name` and how many there are, in one pass.
    public func firstAndCount(_ name: String) -> (first: String?, count: Int) {
        var first: String?
        var n = 0
        forEachMatch(named: name) { _, value in
            if n == 0 { first = String(decoding: value, as: UTF8.self) }
            n += 1
        }
        return (first, n)
    }

    /// How many fields are named `name`.
    public func count(of name: String) -> Int {
        var n = 0
        forEachIndex(named: name) { _ in n += 1 }
        return n
    }

    public func contains(_ name: String) -> Bool { count(of: name) > 0 }

    /// Room for `bytes` more bytes and `fields` more fields without another allocation, in
    /// a buffer of this section's own (a shared one is copied now).
    public mutating func reserveCapacity(bytes: Int, fields: Int) {
        makeRoom(bytes: bytes, spans: fields)
    }

    /// A buffer of this section's own with room for `bytes` more bytes and `spans` more
    /// spans.
    @inline(__always)
    mutating func makeRoom(bytes: Int, spans: Int) {
        guard buffer != nil else {
            buffer = .make(byteCapacity: Swift.max(bytes, 64), spanCapacity: Swift.max(spans, 4))
            return
        }
        // Checked before anything else holds the buffer (a bound copy would make it shared).
        if isKnownUniquelyReferenced(&buffer) && buffer.unsafelyUnwrapped.fits(bytes: bytes, spans: spans) { return }
        buffer = buffer.unsafelyUnwrapped.copy(addingBytes: bytes, spans: spans)
    }

    /// Appends a field. The caller vouches for the bytes (a name from config or code, a
    /// value already checked): `isValid` says whether a section may be sent as it is.
    @_disfavoredOverload
    public mutating func append(_ name: String, _ value: String) {
        HTTP1Bytes.withUTF8(name) { n in HTTP1Bytes.withUTF8(value) { v in append(name: n, value: v) } }
    }

    /// Appends a field with a name from code (the gateway's own headers).
    public mutating func append(_ name: StaticString, _ value: String) {
        name.withUTF8Buffer { n in HTTP1Bytes.withUTF8(value) { v in append(name: n, value: v) } }
    }

    /// Appends a field from another section (or any bytes), copying them.
    public mutating func append(_ field: HTTP1Field) {
        field.nameBytes.withUnsafeBufferPointer { n in
            field.valueBytes.withUnsafeBufferPointer { v in append(name: n, value: v) }
        }
    }

    /// Appends a field from bytes held elsewhere (another section's, copied).
    public mutating func append(name: Swift.Span<UInt8>, value: Swift.Span<UInt8>) {
        name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in append(name: n, value: v) } }
    }

    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        makeRoom(bytes: name.count + value.count, spans: 1)
        // Through the buffer this section holds (unique now, and held by self for the call):
        // no reference counted for it.
        Unmanaged.passUnretained(buffer.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
            $0.appendField(name: name, value: value)
        }
    }

    /// Removes every field named `name` (their bytes stay in the buffer; a head is
    /// short-lived).
    public mutating func removeAll(_ name: String) {
        var doomed: [Int] = []
        forEachIndex(named: name) { doomed.append($0) }
        guard !doomed.isEmpty else { return }
        removeFields { i in doomed.contains(i) }
    }

    /// Removes the fields at the indices `drop` says (spans only; in a buffer of this
    /// section's own).
    mutating func removeFields(_ drop: (Int) -> Bool) {
        makeRoom(bytes: 0, spans: 0)
        guard let b = buffer else { return }
        var kept = 0
        for i in 0..<b.counts.pointee.spanCount where !drop(i) {
            if kept != i { b.setSpan(kept, b.span(i)) }
            kept += 1
        }
        b.counts.pointee.spanCount = kept
    }

    /// Whether every name is a token and every value holds only field-value bytes (RFC 9110
    /// §5.1, §5.5): what a section built from outside text must meet before it is sent.
    public var isValid: Bool {
        withBytes { all in
            (0..<count).allSatisfy { i in
                let s = span(i)
                return s.nameEnd > s.nameStart
                    && all[s.nameStart..<s.nameEnd].allSatisfy(HTTP1Bytes.isTchar)
                    && all[s.valueStart..<s.valueEnd].allSatisfy(HTTP1Bytes.isFieldValueByte)
            }
        }
    }

    /// Calls `body` with each field's name and value bytes, in order, without copying.
    public func forEachField(_ body: (Swift.Span<UInt8>, Swift.Span<UInt8>) -> Void) {
        forEachFieldBuffer { name, value in
            body(Swift.Span(_unsafeElements: name), Swift.Span(_unsafeElements: value))
        }
    }

    /// The same, as buffers: for the engine's own writers.
    func forEachFieldBuffer(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        // Through the bytes and spans: a closure that captured `self` retained its buffer.
        withBytesAndSpans { all, spans in
            for i in 0..<spans.count {
                let s = spans[i]
                body(
                    UnsafeBufferPointer(rebasing: all[s.nameStart..<s.nameEnd]),
                    UnsafeBufferPointer(rebasing: all[s.valueStart..<s.valueEnd]))
            }
        }
    }

    /// A section holding the fields for which `keep(name)` is true, in order.
    /// Room is left for `extraBytes` and `extraFields` more, so the fields a proxy adds
    /// after filtering (Host, X-Forwarded-*, a request id) do not grow it again. The kept
    /// fields' bytes stay where they are: the bytes are copied whole, in one piece, and only
    /// the kept spans are listed (what a dropped field held is never read).
    public func filter(
        names keep: (Swift.Span<UInt8>) -> Bool, extraBytes: Int = 256, extraFields: Int = 8
    ) -> HTTP1Fields {
        guard let source = buffer else {
            var out = HTTP1Fields()
            out.reserveCapacity(bytes: extraBytes, fields: extraFields)
            return out
        }
        let n = source.counts.pointee.spanCount
        let out = HTTP1FieldBuffer.make(
            byteCapacity: source.counts.pointee.byteCount + extraBytes, spanCapacity: n + extraFields)
        out.appendBytes(UnsafeBufferPointer(start: source.bytes, count: source.counts.pointee.byteCount))
        let all = UnsafeBufferPointer(start: source.bytes, count: source.counts.pointee.byteCount)
        for i in 0..<n {
            let s = source.span(i)
            if keep(Swift.Span(_unsafeElements: all[s.nameStart..<s.nameEnd])) { out.appendSpan(s) }
        }
        return withExtendedLifetime(source) { HTTP1Fields(buffer: out) }
    }
}
