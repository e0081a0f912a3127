/// The memory of one field section: its bytes, then the span of each field, in one
/// allocation (an array for each cost two allocations per section, and their growth).
/// `HTTP1Fields` copies share it and copy it before one of them changes it (copy on write),
/// so a buffer is never changed while shared. A parser may keep a buffer it handed over and
/// write the next section into it once nobody else holds it.
///
/// Layout after the header: `byteCapacity` bytes (a multiple of 8), then `spanCapacity`
/// spans. Bytes and spans are plain values, read and written through raw pointers.
final class HTTP1FieldBuffer: ManagedBuffer<HTTP1FieldBuffer.Header, UInt8> {
    struct Header {
        var byteCount = 0
        var spanCount = 0
        let byteCapacity: Int
        let spanCapacity: Int
    }

    static let spanStride = MemoryLayout<HTTP1Fields.Span>.stride

    /// An empty buffer with room for at least this many bytes and spans.
    static func make(byteCapacity: Int, spanCapacity: Int) -> HTTP1FieldBuffer {
        let bytes = (max(byteCapacity, 0) + 7) & ~7
        let spans = max(spanCapacity, 1)
        // Spans keep offsets in 32 bits.
        precondition(bytes < Int(UInt32.max), "field section too large")
        let made = create(minimumCapacity: bytes + spans * spanStride) { _ in
            Header(byteCapacity: bytes, spanCapacity: spans)
        }
        let buffer = unsafeDowncast(made, to: HTTP1FieldBuffer.self)
        assert(Int(bitPattern: buffer.bytes) % MemoryLayout<HTTP1Fields.Span>.alignment == 0)
        // The span region holds spans: bound to their type once, so that `spans` may be
        // read as typed memory.
        UnsafeMutableRawPointer(buffer.bytes + bytes).bindMemory(to: HTTP1Fields.Span.self, capacity: spans)
        return buffer
    }

    /// The first byte. Valid as long as this buffer lives (a managed buffer's elements
    /// never move).
    @inline(__always)
    var bytes: UnsafeMutablePointer<UInt8> { withUnsafeMutablePointerToElements { $0 } }

    /// The header, read and written through its address: `header`, a class's stored
    /// property, costs a dynamic exclusivity check per access (several per field).
    @inline(__always)
    var counts: UnsafeMutablePointer<Header> { withUnsafeMutablePointerToHeader { $0 } }

    @inline(__always)
    private var spanBase: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bytes + counts.pointee.byteCapacity) }

    /// The spans in place (valid while this buffer lives).
    @inline(__always)
    var spans: UnsafeBufferPointer<HTTP1Fields.Span> {
        UnsafeBufferPointer(
            start: spanBase.assumingMemoryBound(to: HTTP1Fields.Span.self), count: counts.pointee.spanCount)
    }

    @inline(__always)
    func span(_ i: Int) -> HTTP1Fields.Span {
        spanBase.load(fromByteOffset: i * Self.spanStride, as: HTTP1Fields.Span.self)
    }

    @inline(__always)
    func setSpan(_ i: Int, _ span: HTTP1Fields.Span) {
        spanBase.storeBytes(of: span, toByteOffset: i * Self.spanStride, as: HTTP1Fields.Span.self)
    }

    /// Room for `bytes` more bytes and `spans` more spans.
    func fits(bytes more: Int, spans moreSpans: Int) -> Bool {
        counts.pointee.byteCount + more <= counts.pointee.byteCapacity
            && counts.pointee.spanCount + moreSpans <= counts.pointee.spanCapacity
    }

    /// A copy with room for at least `bytes` more bytes and `spans` more spans (growing by
    /// half again, so a section built field by field reallocates a few times at most).
    func copy(addingBytes more: Int, spans moreSpans: Int) -> HTTP1FieldBuffer {
        let h = counts.pointee
        let copy = Self.make(
            byteCapacity: max(h.byteCount + more, h.byteCapacity + h.byteCapacity / 2),
            spanCapacity: max(h.spanCount + moreSpans, h.spanCapacity + h.spanCapacity / 2))
        copy.bytes.update(from: bytes, count: h.byteCount)
        copy.spanBase.copyMemory(from: spanBase, byteCount: h.spanCount * Self.spanStride)
        copy.counts.pointee.byteCount = h.byteCount
        copy.counts.pointee.spanCount = h.spanCount
        return copy
    }

    /// Appends bytes; the caller made room.
    @inline(__always)
    func appendBytes(_ from: UnsafeBufferPointer<UInt8>) {
        guard let base = from.baseAddress, !from.isEmpty else { return }
        let c = counts
        let at = c.pointee.byteCount
        precondition(at + from.count <= c.pointee.byteCapacity, "field buffer overrun")
        (bytes + at).update(from: base, count: from.count)
        c.pointee.byteCount = at + from.count
    }

    /// Appends a field's name and value and its span; the caller made room.
    @inline(__always)
    func appendField(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = counts.pointee.byteCount
        appendBytes(name)
        let valueStart = nameStart + name.count
        appendBytes(value)
        appendSpan(
            HTTP1Fields.Span(
                nameStart: nameStart, nameEnd: valueStart, valueStart: valueStart, valueEnd: valueStart + value.count))
    }

    /// Appends a span; the caller made room.
    @inline(__always)
    func appendSpan(_ span: HTTP1Fields.Span) {
        precondition(counts.pointee.spanCount < counts.pointee.spanCapacity, "field buffer overrun")
        setSpan(counts.pointee.spanCount, span)
        counts.pointee.spanCount += 1
    }
}
