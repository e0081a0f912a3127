/// A strict HTTP/1.1 response parser for upstream connections (RFC 9112), with the same
/// contract as `HTTP1RequestParser`: fed chunks of any size, it consumes up to the end of at
/// most one event, holds no input past what it consumed, and any refusal is final.
///
/// The caller announces each response it expects with `expectResponse(toHEAD:)` — a
/// response to HEAD has no body whatever its fields say (RFC 9112 §6.3 rule 1) — and bytes
/// that arrive while none is expected are refused (`unsolicited_response`): a connection
/// with anything unread must not be reused.
///
/// Events: zero or more `.informational` heads (1xx other than 101; the caller decides
/// whether to pass them on — 100 is usually swallowed, 103 forwarded), then `.head`, zero
/// or more `.body` and `.end`. A 101 ends at its head (`.head`, `.end`); the parser then
/// consumes nothing more (`isUpgraded`): the bytes after it belong to the tunnel. A body
/// with neither Content-Length nor chunked coding runs until the connection closes: the
/// caller calls `finish()` at end of stream to get its `.end`.
///
/// Strictness is the request parser's (bare LF, CR, NUL, obs-fold, field syntax, exactly
/// `chunked`, one plain Content-Length, no Transfer-Encoding on HTTP/1.0, limits), except
/// what only requests have (Host, Expect, leading empty lines: refused here). A status
/// line without the SP before an empty reason ("HTTP/1.1 200") is accepted: it changes
/// no framing and common servers send it.
public struct HTTP1ResponseParser: HTTP1ByteParser, Sendable {
    /// One step of a response.
    public enum Event: Sendable, Equatable {
        /// An interim 1xx response (not 101); the final response is still to come.
        case informational(HTTP1ResponseHead)
        case head(HTTP1ResponseHead)
        /// Body bytes: indices into the buffer given to the `parse` call that returned this.
        case body(Range<Int>)
        /// The response is complete; trailer fields of a chunked body, else empty.
        case end(trailers: HTTP1Fields)
    }

    private enum State: Sendable {
        case idle
        case statusLine
        case fields
        case body
        case upgraded
        case failed(HTTP1ParseError)
    }

    private struct StatusLine: Sendable {
        var version: HTTP1Version
        var status: Int
        var reason: Range<Int>
    }

    public let limits: HTTP1Limits
    /// Room a parsed head keeps for fields its consumer adds in place (a proxy's request id,
    /// a nonce, cookies), so that adding them does not copy the head.
    static let slack = (bytes: 128, fields: 4)
    private var state = State.idle
    private var toHEAD = false
    private var switching = false
    private var section: HTTP1FieldSection
    private var statusLine: StatusLine?
    private var body: HTTP1BodyReader

    public init(limits: HTTP1Limits = HTTP1Limits()) {
        self.limits = limits
        // The parser lives with its upstream connection: each head goes into the buffer of
        // the one before once the exchange that had it is over.
        section = HTTP1FieldSection(
            maxBytes: limits.maxHeaderBytes, maxCount: limits.maxHeaderCount,
            tooLarge: .headerSectionTooLarge, tooMany: .tooManyHeaders, keepsSpare: true)
        body = HTTP1BodyReader(framing: .none, limits: limits)
    }

    /// A 101 was received: the connection is now a tunnel and the parser takes no bytes.
    public var isUpgraded: Bool {
        if case .upgraded = state { return true }
        return false
    }

    /// Announces the next response, for a request that was (or was not) HEAD. Call it once
    /// per request, when no response is in progress.
    public mutating func expectResponse(toHEAD: Bool) {
        guard case .idle = state else { preconditionFailure("expectResponse while a response is in progress") }
        self.toHEAD = toHEAD
        state = .statusLine
    }

    /// Parses `input` up to the end of the next event (see `HTTP1RequestParser`'s contract).
    /// `parse(_:)` with the count in `consumed`: the event alone comes back, so a caller that
    /// takes it apart leaves nothing to destroy (a tuple holding an optional event was
    /// destroyed through the runtime's generic value witnesses, several times a request).
    @inline(__always)
    public mutating func next(_ input: UnsafeRawBufferPointer, consumed: inout Int) throws(HTTP1ParseError) -> Event? {
        let (n, event) = try parse(input)
        consumed = n
        return event
    }

    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (
        consumed: Int, event: Event?
    ) {
        if case .failed(let error) = state { throw error }
        do throws(HTTP1ParseError) {
            return try step(input)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// End of stream from the upstream. Returns the `.end` of a close-delimited body; nil
    /// when no response was expected or after a 101; throws `truncated_message` when a
    /// response was expected or under way.
    public mutating func finish() throws(HTTP1ParseError) -> Event? {
        switch state {
        case .failed(let error): throw error
        case .idle, .upgraded: return nil
        case .body where body.endsAtClose:
            _ = try body.finish()
            state = .idle
            return .end(trailers: HTTP1Fields())
        default:
            state = .failed(HTTP1ParseError(.truncatedMessage))
            throw HTTP1ParseError(.truncatedMessage)
        }
    }

    private mutating func step(_ input: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (
        consumed: Int, event: Event?
    ) {
        switch state {
        case .failed(let error):
            throw error
        case .upgraded:
            return (0, nil)
        case .idle:
            if input.count > 0 { throw HTTP1ParseError(.unsolicitedResponse) }
            return (0, nil)
        case .body:
            let (consumed, step) = try body.read(input, from: 0)
            switch step {
            case nil: return (consumed, nil)
            case .body(let range): return (consumed, .body(range))
            case .end(let trailers):
                state = switching ? .upgraded : .idle
                return (consumed, .end(trailers: trailers))
            }
        case .statusLine, .fields:
            return try readHead(input)
        }
    }

    private mutating func readHead(_ input: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (
        consumed: Int, event: Event?
    ) {
        var i = 0
        if case .statusLine = state,
            let whole = section.readWhole(input, startLineLimit: limits.maxRequestLineBytes, slack: Self.slack)
        {
            // The whole head arrived at once; any refusal is left to the line-by-line reading
            // below (one code whichever way the bytes came), so nothing is decided twice.
            let end = whole.end
            let line = whole.fields.withBytes { bytes in
                try? Self.parseStatusLine(UnsafeBufferPointer(rebasing: bytes[..<whole.startLine]))
            }
            // The fields are whole's last use: their buffer moves into the head.
            if let line, let event = try? completeHead(statusLine: line, fields: whole.fields) {
                return (end, event)
            }
        }
        if case .statusLine = state {
            section.reserve(input.count)
            guard
                let end = try section.scanner.scan(
                    input, from: i, into: &section.storage, lineStart: 0,
                    maxLength: limits.maxRequestLineBytes,
                    tooLong: .statusLineTooLong)
            else { return (input.count, nil) }
            i = end
            statusLine = try section.storage.withUnsafeBufferPointer { line throws(HTTP1ParseError) in
                try Self.parseStatusLine(line)
            }
            section.lineStart = section.storage.count
            state = .fields
        }
        guard let end = try section.read(input, from: i), let line = statusLine else { return (input.count, nil) }
        return (end, try completeHead(statusLine: line, fields: section.take()))
    }

    /// The head whose fields `section` holds, checked as a whole: an interim one, or the
    /// final one with the body reader set up for its framing.
    private mutating func completeHead(statusLine line: StatusLine, fields: consuming HTTP1Fields)
        throws(HTTP1ParseError)
        -> Event
    {
        statusLine = nil
        let semantics = try HTTP1HeadFields(fields, version: line.version)
        let framing: HTTP1Framing
        if toHEAD || line.status < 200 || line.status == 204 || line.status == 304 {
            framing = .none
        } else if semantics.chunked {
            framing = .chunked
        } else if let length = semantics.contentLength {
            framing = .contentLength(length)
        } else {
            framing = .untilClose
        }
        let keepAlive = semantics.keepAlive(line.version) && framing != .untilClose && line.status != 101
        let head = HTTP1ResponseHead(
            version: line.version, status: line.status, reasonRange: line.reason,
            fields: fields, framing: framing, keepAlive: keepAlive, listsConnectionOptions: semantics.connectionOther)
        if line.status < 200, line.status != 101 {
            state = .statusLine
            return .informational(head)
        }
        switching = line.status == 101
        body = HTTP1BodyReader(framing: framing, limits: limits)
        state = .body
        return .head(head)
    }

    /// status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4).
    private static func parseStatusLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1ParseError) -> StatusLine {
        guard let sp = line.firstIndex(of: HTTP1Bytes.sp) else { throw HTTP1ParseError(.invalidStatusLine) }
        let version = try HTTP1Version.parse(line[..<sp])
        let codeStart = sp + 1
        guard line.endIndex - codeStart >= 3 else { throw HTTP1ParseError(.invalidStatusLine) }
        var status = 0
        for k in codeStart..<(codeStart + 3) {
            guard HTTP1Bytes.isDigit(line[k]) else { throw HTTP1ParseError(.invalidStatusLine) }
            status = status * 10 + Int(line[k] - 0x30)
        }
        var reasonStart = codeStart + 3
        if reasonStart < line.endIndex {
            guard line[reasonStart] == HTTP1Bytes.sp else { throw HTTP1ParseError(.invalidStatusLine) }
            reasonStart += 1
        }
        guard line[reasonStart...].allSatisfy(HTTP1Bytes.isFieldValueByte) else {
            throw HTTP1ParseError(.invalidStatusLine)
        }
        guard (100...599).contains(status) else { throw HTTP1ParseError(.invalidStatus) }
        return StatusLine(version: version, status: status, reason: reasonStart..<line.endIndex)
    }
}
