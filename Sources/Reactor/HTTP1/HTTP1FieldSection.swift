import Glibc

/// Reads one field section — the fields of a head (RFC 9112 §5) or the trailer section of a
/// chunked body (RFC 9112 §7.1.2) — line by line from chunks of any size, checking each
/// field line as it completes and the section's byte and count limits as it grows.
///
/// A head that has arrived whole (the usual case: one read holds it) is taken in one step
/// instead (`readWhole`): one copy of its bytes, lines found with memchr. That step only
/// accepts what the line-by-line reader accepts, and gives up on anything else, so every
/// refusal still comes from the line-by-line reader, with its code. Either way the section
/// is handed over as one `HTTP1Fields` buffer.
struct HTTP1FieldSection: Sendable {
    /// Bytes of the section's lines without their CRLFs (a head's start line comes first).
    var storage: [UInt8] = []
    var spans: [HTTP1Fields.Span] = []
    /// Where the line being read starts in `storage`.
    var lineStart = 0
    var scanner = HTTP1LineScanner()
    /// Bytes of the completed field lines, each with its CRLF.
    private var used = 0
    private let maxBytes: Int
    private let maxCount: Int
    private let tooLarge: HTTP1ParseError.Code
    private let tooMany: HTTP1ParseError.Code
    /// Keep the buffer of the last section handed over, to reuse once it is free again
    /// (`takeSpare`): heads of a keep-alive connection. Trailers do not.
    private let keepsSpare: Bool
    /// `nonisolated(unsafe)`: see `HTTP1Fields.buffer`; reused only when no copy holds it.
    nonisolated(unsafe) private var spare: HTTP1FieldBuffer?

    init(
        maxBytes: Int, maxCount: Int, tooLarge: HTTP1ParseError.Code, tooMany: HTTP1ParseError.Code,
        keepsSpare: Bool = false
    ) {
        self.maxBytes = maxBytes
        self.maxCount = maxCount
        self.tooLarge = tooLarge
        self.tooMany = tooMany
        self.keepsSpare = keepsSpare
    }

    /// Reads field lines from `input[start...]`. Returns the index just past the empty line
    /// that ends the section, or nil when every byte was taken and the section goes on.
    mutating func read(_ input: UnsafeRawBufferPointer, from start: Int) throws(HTTP1ParseError) -> Int? {
        var i = start
        while true {
            // A field line's CRLF counts; the empty line ending the section does not.
            let budget = max(0, maxBytes - used - 2)
            guard
                let end = try scanner.scan(
                    input, from: i, into: &storage, lineStart: lineStart,
                    maxLength: budget, tooLong: tooLarge)
            else { return nil }
            i = end
            if storage.count == lineStart { return i }
            guard spans.count < maxCount else { throw HTTP1ParseError(tooMany) }
            try addField()
            used += storage.count - lineStart + 2
            lineStart = storage.count
        }
    }

    /// The whole head in one step: when `input` holds a complete head — a start line of
    /// 1…`startLineLimit` bytes, field lines within the section's limits, the empty line —
    /// and every line is well-formed, copies it (the empty line aside) into one buffer in
    /// one piece (`spare`, when nobody else holds it and it is large enough), notes the
    /// fields there, and returns where the head ends, how long the start line is (the
    /// head's first bytes) and the fields. nil when any of that does not hold: the section
    /// is then untouched, for the line-by-line reader. Only for a section nothing was read
    /// into yet, a CR that waits for its LF included (`storage` does not hold it): else a CR
    /// refused when the next byte comes with it would pass when it comes alone. `slack`: room
    /// left for fields a consumer adds in place.
    mutating func readWhole(
        _ input: UnsafeRawBufferPointer, startLineLimit: Int, slack: (bytes: Int, fields: Int) = (0, 0)
    ) -> (end: Int, startLine: Int, fields: HTTP1Fields)? {
        guard storage.isEmpty, spans.isEmpty, !scanner.pendingCR, let base = input.baseAddress else { return nil }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let count = input.count
        // The start line: non-empty, CRLF-terminated, within its limit. What it says is the
        // caller's to check.
        guard let lf = memchr(bytes, Int32(HTTP1Bytes.lf), count) else { return nil }
        let startLine = bytes.distance(to: lf.assumingMemoryBound(to: UInt8.self)) - 1
        guard startLine > 0, startLine <= startLineLimit, bytes[startLine] == HTTP1Bytes.cr else { return nil }
        // Spans are noted on the stack first (the buffer is sized once they are counted); a
        // head with more fields than fit there is read line by line.
        let maxCount = min(maxCount, Self.wholeHeadFields)
        let maxBytes = maxBytes
        return withUnsafeTemporaryAllocation(of: HTTP1Fields.Span.self, capacity: maxCount) { found in
            var n = 0
            var lineStart = startLine + 2
            var sectionBytes = 0
            while lineStart < count {
                guard let lf = memchr(bytes + lineStart, Int32(HTTP1Bytes.lf), count - lineStart) else { return nil }
                let lineEnd = bytes.distance(to: lf.assumingMemoryBound(to: UInt8.self)) - 1
                // A bare LF (no CR before it), and a CR alone on a line, are the line reader's
                // to refuse.
                guard lineEnd >= lineStart, bytes[lineEnd] == HTTP1Bytes.cr else { return nil }
                if lineEnd == lineStart {
                    let fields = takeSpare(bytes: lineStart + slack.bytes, spans: n + slack.fields)
                    // Written through `fields` (a local that holds it), not a second local
                    // reference: that one was an atomic retain and release per head.
                    fields.buffer.unsafelyUnwrapped.appendBytes(UnsafeBufferPointer(start: bytes, count: lineStart))
                    for k in 0..<n { fields.buffer.unsafelyUnwrapped.appendSpan(found[k]) }
                    return (lineEnd + 2, startLine, fields)
                }
                // A field line's CRLF counts toward the section's bytes (see `read`).
                sectionBytes += lineEnd - lineStart + 2
                guard n < maxCount, sectionBytes <= maxBytes,
                    let span = try? Self.fieldLine(UnsafeBufferPointer(start: bytes, count: lineEnd), from: lineStart)
                else { return nil }
                found[n] = span
                n += 1
                lineStart = lineEnd + 2
            }
            return nil
        }
    }

    /// The most fields `readWhole` takes in one step: their spans fit in 1 KiB of stack,
    /// below which Swift never puts a temporary allocation on the heap.
    static let wholeHeadFields = 63

    /// A buffer cleared for a head of this size: `spare` again when the head it held last has
    /// been let go of by everyone else and it is large enough, else a new one, which becomes
    /// the spare (a parser on a keep-alive connection so allocates nothing per head).
    private mutating func takeSpare(bytes: Int, spans: Int) -> HTTP1Fields {
        if keepsSpare, isKnownUniquelyReferenced(&spare), let b = spare,
            b.counts.pointee.byteCapacity >= bytes, b.counts.pointee.spanCapacity >= spans
        {
            b.counts.pointee.byteCount = 0
            b.counts.pointee.spanCount = 0
            return HTTP1Fields(buffer: b)
        }
        let b = HTTP1FieldBuffer.make(byteCapacity: max(bytes, 256), spanCapacity: max(spans, 12))
        if keepsSpare { spare = b }
        return HTTP1Fields(buffer: b)
    }

    /// Sizes the buffers once for a head that starts in a chunk of `available` bytes, so the
    /// usual head costs one allocation for its bytes and one for its spans, not a growth step
    /// every few lines. Done when the first byte arrives, so an idle connection holds neither.
    mutating func reserve(_ available: Int) {
        if storage.capacity == 0 { storage.reserveCapacity(Swift.min(available, 4096)) }
        if spans.capacity == 0 { spans.reserveCapacity(16) }
    }

    /// The section read line by line so far, handed over (copied into one buffer); the
    /// reader is left empty.
    mutating func take() -> HTTP1Fields {
        guard !storage.isEmpty || !spans.isEmpty else {
            clear()
            return HTTP1Fields()
        }
        let fields = takeSpare(bytes: storage.count, spans: spans.count)
        storage.withUnsafeBufferPointer { fields.buffer.unsafelyUnwrapped.appendBytes($0) }
        for span in spans { fields.buffer.unsafelyUnwrapped.appendSpan(span) }
        clear()
        return fields
    }

    /// Empty again, ready for the next section (the spare kept).
    mutating func clear() {
        storage = []
        spans = []
        lineStart = 0
        scanner = HTTP1LineScanner()
        used = 0
    }

    /// field-line = field-name ":" OWS field-value OWS (RFC 9112 §5). CR, LF and NUL never
    /// reach here (the scanner refuses them).
    private mutating func addField() throws(HTTP1ParseError) {
        let start = lineStart
        let span = try storage.withUnsafeBufferPointer { line throws(HTTP1ParseError) in
            try Self.fieldLine(line, from: start)
        }
        spans.append(span)
    }

    /// Checks the field line `all[start...]` and returns where its name and value are.
    /// Read through a buffer pointer: this runs for every field of every head.
    private static func fieldLine(_ all: UnsafeBufferPointer<UInt8>, from start: Int) throws(HTTP1ParseError)
        -> HTTP1Fields.Span
    {
        let end = all.count
        // RFC 9112 §5.2: obs-fold is refused with 400; a first field line starting with
        // whitespace (RFC 9112 §2.2) is refused the same way.
        if HTTP1Bytes.isWhitespace(all[start]) { throw HTTP1ParseError(.obsFold) }
        // The name: tchars up to the colon, one table load per byte.
        let classes = HTTP1Bytes.nameClasses.utf8Start
        var colon = start
        while colon < end {
            let c = classes[Int(all[colon])]
            if c != UInt8(ascii: "t") {
                if c == HTTP1Bytes.colon { break }
                throw badName(all, from: start)
            }
            colon += 1
        }
        guard colon < end else { throw HTTP1ParseError(.missingColon) }
        if colon == start { throw HTTP1ParseError(.emptyFieldName) }
        var valueStart = colon + 1
        var valueEnd = end
        while valueStart < valueEnd, HTTP1Bytes.isWhitespace(all[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, HTTP1Bytes.isWhitespace(all[valueEnd - 1]) { valueEnd -= 1 }
        guard HTTP1Bytes.allFieldValueBytes(all, from: valueStart, to: valueEnd) else {
            throw HTTP1ParseError(.invalidFieldValue)
        }
        return HTTP1Fields.Span(nameStart: start, nameEnd: colon, valueStart: valueStart, valueEnd: valueEnd)
    }

    /// Why a line whose name holds a byte that is not a tchar is refused, in the order the
    /// checks are documented: no colon, empty name, whitespace before the colon, bad name.
    private static func badName(_ all: UnsafeBufferPointer<UInt8>, from start: Int) -> HTTP1ParseError {
        guard let colon = all[start...].firstIndex(of: HTTP1Bytes.colon) else { return HTTP1ParseError(.missingColon) }
        if colon == start { return HTTP1ParseError(.emptyFieldName) }
        if HTTP1Bytes.isWhitespace(all[colon - 1]) { return HTTP1ParseError(.whitespaceBeforeColon) }
        return HTTP1ParseError(.invalidFieldName)
    }
}
