/// Reads one message body after its head, as framed by RFC 9112 §6.3: a fixed length, the
/// chunked coding with its extensions and trailer section (§7.1), or until the connection
/// closes. Body bytes are never copied: a step names a range of the caller's input.
struct HTTP1BodyReader: Sendable {
    enum Step: Sendable {
        case body(Range<Int>)
        case end(HTTP1Fields)
    }

    private enum State: Sendable {
        case fixed(remaining: UInt64)
        case chunkLine
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    private var state: State
    private let limits: HTTP1Limits
    private var scanner = HTTP1LineScanner()
    /// The chunk line being read (reused: allocated once per body at most).
    private var line: [UInt8] = []
    private var trailers: HTTP1FieldSection

    init(framing: HTTP1Framing, limits: HTTP1Limits) {
        switch framing {
        case .none: state = .fixed(remaining: 0)
        case .contentLength(let n): state = .fixed(remaining: n)
        case .chunked: state = .chunkLine
        case .untilClose: state = .untilClose
        }
        self.limits = limits
        trailers = HTTP1FieldSection(
            maxBytes: limits.maxTrailerBytes, maxCount: limits.maxHeaderCount,
            tooLarge: .trailerSectionTooLarge, tooMany: .trailerSectionTooLarge)
    }

    /// The message's body ended without an `.end` step yet (only a close-delimited body
    /// ends at end of stream).
    var endsAtClose: Bool {
        if case .untilClose = state { return true }
        return false
    }

    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Advances through `input[start...]` to the next step. Returns the index reached and the
    /// step, or nil when every byte was taken and the body goes on.
    mutating func read(_ input: UnsafeRawBufferPointer, from start: Int) throws(HTTP1ParseError) -> (Int, Step?) {
        var i = start
        while true {
            switch state {
            case .fixed(let remaining):
                if remaining == 0 {
                    state = .done
                    return (i, .end(HTTP1Fields()))
                }
                guard i < input.count else { return (i, nil) }
                let n = Int(min(remaining, UInt64(input.count - i)))
                state = .fixed(remaining: remaining - UInt64(n))
                return (i + n, .body(i..<(i + n)))
            case .chunkLine:
                let maxLength = limits.maxChunkSizeDigits + limits.maxChunkExtensionBytes
                let end: Int?
                do throws(HTTP1ParseError) {
                    end = try scanner.scan(
                        input, from: i, into: &line, lineStart: 0, maxLength: maxLength,
                        tooLong: .chunkExtensionTooLarge)
                } catch {
                    guard error.code == .chunkExtensionTooLarge, hexDigits(line) > limits.maxChunkSizeDigits else {
                        throw error
                    }
                    throw HTTP1ParseError(.chunkSizeTooLarge)
                }
                guard let end else { return (input.count, nil) }
                i = end
                let size = try parseChunkLine()
                line.removeAll(keepingCapacity: true)
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard i < input.count else { return (i, nil) }
                let n = min(remaining, input.count - i)
                state = n == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - n)
                return (i + n, .body(i..<(i + n)))
            case .chunkDataEnd:
                // chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF: the data's CRLF must
                // follow at once, or the sender's idea of the size differs from ours.
                guard
                    let end = try scanner.scan(
                        input, from: i, into: &line, lineStart: 0, maxLength: 0,
                        tooLong: .invalidChunkTerminator)
                else { return (input.count, nil) }
                i = end
                state = .chunkLine
            case .trailers:
                guard let end = try trailers.read(input, from: i) else { return (input.count, nil) }
                let fields = trailers.take()
                try Self.checkTrailers(fields)
                state = .done
                return (end, .end(fields))
            case .untilClose:
                guard i < input.count else { return (i, nil) }
                return (input.count, .body(i..<input.count))
            case .done:
                return (i, nil)
            }
        }
    }

    /// End of stream: ends a close-delimited body; anywhere else the message is truncated.
    mutating func finish() throws(HTTP1ParseError) -> Step {
        guard case .untilClose = state else { throw HTTP1ParseError(.truncatedMessage) }
        state = .done
        return .end(HTTP1Fields())
    }

    private func hexDigits(_ bytes: [UInt8]) -> Int {
        bytes.prefix { HTTP1Bytes.hexValue($0) != nil }.count
    }

    /// chunk-size [ chunk-ext ] (RFC 9112 §7.1, §7.1.1), CRLF already removed.
    private func parseChunkLine() throws(HTTP1ParseError) -> Int {
        var size: UInt64 = 0
        var digits = 0
        while digits < line.count, let v = HTTP1Bytes.hexValue(line[digits]) {
            digits += 1
            if digits > limits.maxChunkSizeDigits || size > UInt64(Int.max) >> 4 {
                throw HTTP1ParseError(.chunkSizeTooLarge)
            }
            size = size << 4 | v
        }
        guard digits > 0 else { throw HTTP1ParseError(.invalidChunkSize) }
        if digits < line.count {
            guard line.count - digits <= limits.maxChunkExtensionBytes else {
                throw HTTP1ParseError(.chunkExtensionTooLarge)
            }
            try Self.checkChunkExtensions(line[digits...])
        }
        return Int(size)
    }

    /// chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ), names and
    /// token values tchar, quoted values per RFC 9110 §5.6.4. Bytes after the size that do not
    /// start an extension make the size itself invalid ("5g", "5 ").
    static func checkChunkExtensions(_ ext: ArraySlice<UInt8>) throws(HTTP1ParseError) {
        var p = ext.startIndex
        let end = ext.endIndex
        func skipWhitespace() { while p < end, HTTP1Bytes.isWhitespace(ext[p]) { p += 1 } }
        func token() -> Bool {
            let s = p
            while p < end, HTTP1Bytes.isTchar(ext[p]) { p += 1 }
            return p > s
        }
        var first = true
        while p < end {
            skipWhitespace()
            guard p < end, ext[p] == 0x3B else {
                throw HTTP1ParseError(first ? .invalidChunkSize : .invalidChunkExtension)
            }
            first = false
            p += 1
            skipWhitespace()
            guard token() else { throw HTTP1ParseError(.invalidChunkExtension) }
            var q = p
            while q < end, HTTP1Bytes.isWhitespace(ext[q]) { q += 1 }
            guard q < end, ext[q] == 0x3D else { continue }
            p = q + 1
            skipWhitespace()
            if p < end, ext[p] == 0x22 {
                p += 1
                var closed = false
                while p < end {
                    let b = ext[p]
                    if b == 0x22 {
                        closed = true
                        p += 1
                        break
                    }
                    if b == 0x5C {
                        guard p + 1 < end, HTTP1Bytes.isFieldValueByte(ext[p + 1]) else { break }
                        p += 2
                        continue
                    }
                    // qdtext: HTAB / SP / "!" / %x23-5B / %x5D-7E / obs-text
                    guard HTTP1Bytes.isFieldValueByte(b) else { break }
                    p += 1
                }
                guard closed else { throw HTTP1ParseError(.invalidChunkExtension) }
            } else if !token() {
                throw HTTP1ParseError(.invalidChunkExtension)
            }
        }
    }

    /// RFC 9110 §6.5.1: fields that frame or route the message must not arrive as trailers.
    static func checkTrailers(_ fields: HTTP1Fields) throws(HTTP1ParseError) {
        for i in fields.indices
        where fields.nameEquals(i, "content-length")
            || fields.nameEquals(i, "transfer-encoding") || fields.nameEquals(i, "host")
        {
            throw HTTP1ParseError(.forbiddenTrailerField)
        }
    }
}
