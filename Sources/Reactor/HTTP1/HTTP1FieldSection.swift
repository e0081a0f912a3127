/// Reads one field section — the fields of a head (RFC 9112 §5) or the trailer section of a
/// chunked body (RFC 9112 §7.1.2) — line by line from chunks of any size, checking each
/// field line as it completes and the section's byte and count limits as it grows.
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

    init(maxBytes: Int, maxCount: Int, tooLarge: HTTP1ParseError.Code, tooMany: HTTP1ParseError.Code) {
        self.maxBytes = maxBytes
        self.maxCount = maxCount
        self.tooLarge = tooLarge
        self.tooMany = tooMany
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

    /// The section read so far, handed over; the reader is left empty.
    mutating func take() -> HTTP1Fields {
        let fields = HTTP1Fields(storage: storage, spans: spans)
        self = HTTP1FieldSection(maxBytes: maxBytes, maxCount: maxCount, tooLarge: tooLarge, tooMany: tooMany)
        return fields
    }

    /// field-line = field-name ":" OWS field-value OWS (RFC 9112 §5). CR, LF and NUL never
    /// reach here (the scanner refuses them).
    private mutating func addField() throws(HTTP1ParseError) {
        let end = storage.count
        let first = storage[lineStart]
        // RFC 9112 §5.2: obs-fold is refused with 400; a first field line starting with
        // whitespace (RFC 9112 §2.2) is refused the same way.
        if HTTP1Bytes.isWhitespace(first) { throw HTTP1ParseError(.obsFold) }
        guard let colon = storage[lineStart..<end].firstIndex(of: HTTP1Bytes.colon) else {
            throw HTTP1ParseError(.missingColon)
        }
        if colon == lineStart { throw HTTP1ParseError(.emptyFieldName) }
        if HTTP1Bytes.isWhitespace(storage[colon - 1]) { throw HTTP1ParseError(.whitespaceBeforeColon) }
        for k in lineStart..<colon where !HTTP1Bytes.isTchar(storage[k]) {
            throw HTTP1ParseError(.invalidFieldName)
        }
        var valueStart = colon + 1
        var valueEnd = end
        while valueStart < valueEnd, HTTP1Bytes.isWhitespace(storage[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, HTTP1Bytes.isWhitespace(storage[valueEnd - 1]) { valueEnd -= 1 }
        for k in valueStart..<valueEnd where !HTTP1Bytes.isFieldValueByte(storage[k]) {
            throw HTTP1ParseError(.invalidFieldValue)
        }
        spans.append(HTTP1Fields.Span(nameStart: lineStart, nameEnd: colon, valueStart: valueStart, valueEnd: valueEnd))
    }
}
