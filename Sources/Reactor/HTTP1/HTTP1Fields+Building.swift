/// Reading fields by name and building field sections (a response head, an upstream
/// request head). Building appends to the one byte buffer, so a section of any size costs
/// two growing arrays, not a string per field.
extension HTTP1Fields {
    /// Every value of fields named `name` (ASCII case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        var out: [String] = []
        forEachIndex(named: name) { out.append(String(decoding: valueBytes($0), as: UTF8.self)) }
        return out
    }

    /// Calls `body` with the value bytes of each field named `name` (ASCII case-insensitive),
    /// in order, without copying them.
    public func forEachValue(named name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        storage.withUnsafeBufferPointer { all in
            forEachIndex(named: name) { i in
                let span = spans[i]
                body(UnsafeBufferPointer(rebasing: all[span.valueStart..<span.valueEnd]))
            }
        }
    }

    /// How many fields are named `name`.
    public func count(of name: String) -> Int {
        var n = 0
        forEachIndex(named: name) { _ in n += 1 }
        return n
    }

    public func contains(_ name: String) -> Bool { count(of: name) > 0 }

    /// Appends a field. The caller vouches for the bytes (a name from config or code, a
    /// value already checked): `isValid` says whether a section may be sent as it is.
    public mutating func append(_ name: String, _ value: String) {
        HTTP1Bytes.withUTF8(name) { n in HTTP1Bytes.withUTF8(value) { v in append(name: n, value: v) } }
    }

    /// Appends a field from another section (or any bytes), copying them.
    public mutating func append(_ field: HTTP1Field) {
        field.nameBytes.withUnsafeBufferPointer { n in
            field.valueBytes.withUnsafeBufferPointer { v in append(name: n, value: v) }
        }
    }

    public mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = storage.count
        storage.append(contentsOf: name)
        let valueStart = storage.count
        storage.append(contentsOf: value)
        spans.append(Span(nameStart: nameStart, nameEnd: valueStart, valueStart: valueStart, valueEnd: storage.count))
    }

    /// Removes every field named `name` (their bytes stay in storage until the section is
    /// copied; a head is short-lived).
    public mutating func removeAll(_ name: String) {
        let lowered = Array(name.utf8).map(HTTP1Fields.lower)
        spans.removeAll { span in
            storage[span.nameStart..<span.nameEnd].elementsEqual(lowered) { HTTP1Fields.lower($0) == $1 }
        }
    }

    /// Whether every name is a token and every value holds only field-value bytes (RFC 9110
    /// §5.1, §5.5): what a section built from outside text must meet before it is sent.
    public var isValid: Bool {
        spans.allSatisfy { span in
            span.nameEnd > span.nameStart
                && storage[span.nameStart..<span.nameEnd].allSatisfy(HTTP1Bytes.isTchar)
                && storage[span.valueStart..<span.valueEnd].allSatisfy(HTTP1Bytes.isFieldValueByte)
        }
    }

    /// Calls `body` with each field's name and value bytes, in order, without copying.
    public func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        storage.withUnsafeBufferPointer { all in
            for span in spans {
                body(
                    UnsafeBufferPointer(rebasing: all[span.nameStart..<span.nameEnd]),
                    UnsafeBufferPointer(rebasing: all[span.valueStart..<span.valueEnd]))
            }
        }
    }

    /// A section holding the fields for which `keep(name)` is true, in order.
    /// Room is left for `extraBytes` and `extraFields` more, so the fields a proxy adds
    /// after filtering (Host, X-Forwarded-*, a request id) do not grow the arrays again.
    /// The kept fields' bytes stay where they are: the section's bytes are copied whole, in
    /// one piece, and only the kept spans are listed (what a dropped field held is never read).
    public func filter(
        names keep: (UnsafeBufferPointer<UInt8>) -> Bool, extraBytes: Int = 256, extraFields: Int = 8
    ) -> HTTP1Fields {
        var kept: [Span] = []
        kept.reserveCapacity(spans.count + extraFields)
        let bytes = storage.withUnsafeBufferPointer { all in
            for span in spans where keep(UnsafeBufferPointer(rebasing: all[span.nameStart..<span.nameEnd])) {
                kept.append(span)
            }
            return [UInt8](unsafeUninitializedCapacity: all.count + extraBytes) { buffer, initialized in
                if let from = all.baseAddress, let to = buffer.baseAddress { to.update(from: from, count: all.count) }
                initialized = all.count
            }
        }
        return HTTP1Fields(storage: bytes, spans: kept)
    }

    @inline(__always)
    public static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
}
