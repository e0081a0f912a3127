/// A strict HTTP/1.1 request parser (RFC 9112): a resumable state machine fed the bytes of
/// one connection in chunks of any size, with no I/O. Feeding one byte at a time gives the
/// same events as feeding everything at once (body ranges are then split differently).
///
/// **Contract.** `parse` consumes input up to the end of at most one event and returns how
/// many bytes it consumed with the event, if any. A nil event means every byte was consumed
/// and more are needed. After an event, call `parse` again with the bytes not consumed —
/// even none, since an empty or fully received body ends with `.end` without new input —
/// until it returns a nil event. To apply backpressure (say, while a pipelined request waits
/// for the one before it to be answered, or while the upstream is not taking body bytes)
/// simply stop calling: the parser holds nothing of the input past what it consumed, and
/// the unconsumed bytes, which may start the next pipelined request, are fed again later.
///
/// **Events.** Every request is `.head`, zero or more `.body`, then `.end`; the parser is
/// then ready for the next request on the connection. `.body` names the body bytes as a
/// range of the buffer passed to that call (no copy); the head's and trailers' bytes are
/// copied once, into one buffer each.
///
/// **Refusals.** Any refusal throws `HTTP1ParseError` (its `status` is the answer) and is
/// final: every later call throws the same error; the connection must be closed. Choices
/// beyond the RFC's MUSTs, all on the strict side:
/// - lines end with CRLF only; a bare LF is refused (RFC 9112 §2.2 allows accepting it),
///   as are a bare CR and NUL anywhere in a head, a chunk line or a trailer section;
/// - one empty line before a request line is ignored (RFC 9112 §2.2 "at least one"), a
///   second is refused (`leading_empty_lines`);
/// - Content-Length must be one field of 1*DIGIT: repeated fields or comma lists are refused
///   even with equal values (RFC 9112 §6.3 rule 5 would allow them);
/// - Transfer-Encoding must be exactly `chunked`: other token lists are 501, malformed
///   values 400; never with Content-Length, never on HTTP/1.0;
/// - an oversized request line is 414; too many fields or too many field bytes is 431;
/// - checks on a complete head run in this order: framing (see `HTTP1HeadFields`), Host
///   (missing on HTTP/1.1, or repeated), Expect.
public struct HTTP1RequestParser: HTTP1ByteParser, Sendable {
    /// One step of a request.
    public enum Event: Sendable, Equatable {
        case head(HTTP1RequestHead)
        /// Body bytes: indices into the buffer given to the `parse` call that returned this.
        case body(Range<Int>)
        /// The request is complete; trailer fields of a chunked body, else empty.
        case end(trailers: HTTP1Fields)
    }

    private enum State: Sendable {
        case requestLine
        case fields
        case body
        case failed(HTTP1ParseError)
    }

    private struct RequestLine: Sendable {
        var method: String
        var target: Range<Int>
        var form: HTTP1RequestHead.TargetForm
        var version: HTTP1Version
    }

    public let limits: HTTP1Limits
    private var state = State.requestLine
    private var section: HTTP1FieldSection
    private var requestLine: RequestLine?
    private var skippedEmptyLine = false
    private var body: HTTP1BodyReader

    public init(limits: HTTP1Limits = HTTP1Limits()) {
        self.limits = limits
        section = HTTP1FieldSection(
            maxBytes: limits.maxHeaderBytes, maxCount: limits.maxHeaderCount,
            tooLarge: .headerSectionTooLarge, tooMany: .tooManyHeaders, keepsSpare: true)
        body = HTTP1BodyReader(framing: .none, limits: limits)
    }

    /// Between requests with no byte of the next one taken: an end of stream here is clean.
    public var isIdle: Bool {
        if case .requestLine = state { return section.storage.isEmpty }
        return false
    }

    /// Parses `input` up to the end of the next event (see the type's contract).
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

    private mutating func step(_ input: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (
        consumed: Int, event: Event?
    ) {
        switch state {
        case .failed(let error):
            throw error
        case .body:
            let (consumed, step) = try body.read(input, from: 0)
            switch step {
            case nil: return (consumed, nil)
            case .body(let range): return (consumed, .body(range))
            case .end(let trailers):
                state = .requestLine
                skippedEmptyLine = false
                return (consumed, .end(trailers: trailers))
            }
        case .requestLine, .fields:
            return try readHead(input)
        }
    }

    private mutating func readHead(_ input: UnsafeRawBufferPointer) throws(HTTP1ParseError) -> (
        consumed: Int, event: Event?
    ) {
        var i = 0
        if case .requestLine = state, let whole = section.readWhole(input, startLineLimit: limits.maxRequestLineBytes) {
            // The whole head arrived at once. Any refusal, from here on too, is left to the
            // line-by-line reading below, so that it has one code whichever way the bytes came.
            let end = whole.end
            let line = whole.fields.withBytes { bytes in
                try? Self.parseRequestLine(UnsafeBufferPointer(rebasing: bytes[..<whole.startLine]))
            }
            // The fields are whole's last use: their buffer moves into the head.
            if let line, let head = try? completeHead(requestLine: line, fields: whole.fields) {
                return (end, .head(head))
            }
        }
        if case .requestLine = state {
            section.reserve(input.count)
            while true {
                guard
                    let end = try section.scanner.scan(
                        input, from: i, into: &section.storage, lineStart: 0,
                        maxLength: limits.maxRequestLineBytes,
                        tooLong: .requestLineTooLong)
                else { return (input.count, nil) }
                i = end
                if !section.storage.isEmpty { break }
                if skippedEmptyLine { throw HTTP1ParseError(.leadingEmptyLines) }
                skippedEmptyLine = true
            }
            requestLine = try section.storage.withUnsafeBufferPointer { line throws(HTTP1ParseError) in
                try Self.parseRequestLine(line)
            }
            section.lineStart = section.storage.count
            state = .fields
        }
        guard let end = try section.read(input, from: i), let line = requestLine else { return (input.count, nil) }
        return (end, .head(try completeHead(requestLine: line, fields: section.take())))
    }

    /// The head whose fields `section` holds: checked as a whole (framing, Host, Expect),
    /// handed over, and the body reader set up for it.
    private mutating func completeHead(requestLine line: RequestLine, fields: consuming HTTP1Fields)
        throws(HTTP1ParseError)
        -> HTTP1RequestHead
    {
        let semantics = try HTTP1HeadFields(fields, version: line.version)
        if semantics.hostCount > 1 { throw HTTP1ParseError(.multipleHost) }
        // RFC 9112 §3.2: "A server MUST respond with a 400 … to any HTTP/1.1 request message
        // that lacks a Host header field and to any request message that contains more than
        // one Host header field".
        if semantics.hostCount == 0, line.version == .http11 { throw HTTP1ParseError(.missingHost) }
        if semantics.expectContinue == false { throw HTTP1ParseError(.unsupportedExpectation) }
        let head = HTTP1RequestHead(
            method: line.method, targetRange: line.target, targetForm: line.form,
            version: line.version, fields: fields, semantics: semantics)
        body = HTTP1BodyReader(framing: head.framing, limits: limits)
        requestLine = nil
        state = .body
        return head
    }

    /// request-line = method SP request-target SP HTTP-version (RFC 9112 §3), single SPs.
    private static func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1ParseError) -> RequestLine {
        if line.elementsEqual("PRI * HTTP/2.0".utf8) { throw HTTP1ParseError(.http2Preface) }
        guard let firstSP = line.firstIndex(of: HTTP1Bytes.sp),
            let lastSP = line.lastIndex(of: HTTP1Bytes.sp)
        else { throw HTTP1ParseError(.invalidRequestLine) }
        let methodBytes = line[..<firstSP]
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(HTTP1Bytes.isTchar) else {
            throw HTTP1ParseError(.invalidMethod)
        }
        // One SP only: "GET /" is an HTTP/0.9 simple request.
        guard lastSP > firstSP else { throw HTTP1ParseError(.http09) }
        let version = try HTTP1Version.parse(line[(lastSP + 1)...])
        let target = line[(firstSP + 1)..<lastSP]
        guard !target.isEmpty, target.allSatisfy(HTTP1Bytes.isTargetByte) else {
            throw HTTP1ParseError(.invalidTarget)
        }
        let method = String(decoding: methodBytes, as: UTF8.self)
        let form = try targetForm(target, method: method)
        return RequestLine(method: method, target: target.startIndex..<target.endIndex, form: form, version: version)
    }

    /// RFC 9112 §3.2: origin-form for most requests, authority-form only (and always) for
    /// CONNECT, asterisk-form only for OPTIONS, absolute-form for any.
    private static func targetForm(_ target: Slice<UnsafeBufferPointer<UInt8>>, method: String) throws(HTTP1ParseError)
        -> HTTP1RequestHead.TargetForm
    {
        if method == "CONNECT" {
            // authority-form = uri-host ":" port
            guard let colon = target.lastIndex(of: HTTP1Bytes.colon), colon > target.startIndex,
                colon + 1 < target.endIndex, target[(colon + 1)...].allSatisfy(HTTP1Bytes.isDigit),
                target.first != 0x2F
            else { throw HTTP1ParseError(.invalidTarget) }
            return .authority
        }
        if target.first == 0x2F { return .origin }
        if target.count == 1, target.first == 0x2A {
            guard method == "OPTIONS" else { throw HTTP1ParseError(.invalidTarget) }
            return .asterisk
        }
        // absolute-form, narrowed to the hierarchical URIs a proxy sees: scheme "://"
        // authority, scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), the authority made of
        // RFC 3986 userinfo/host/port bytes. "example.com:443" (authority-form outside
        // CONNECT, or a URI whose scheme is "example.com") is refused rather than guessed at.
        func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
        func isAuthorityByte(_ b: UInt8) -> Bool {
            switch b {
            case 0x2D, 0x2E, 0x5F, 0x7E, 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D,
                0x3A, 0x40, 0x5B, 0x5D, 0x25:
                true  // - . _ ~ ! $ & ' ( ) * + , ; = : @ [ ] %
            default: isAlpha(b) || HTTP1Bytes.isDigit(b)
            }
        }
        guard let colon = target.firstIndex(of: HTTP1Bytes.colon), colon > target.startIndex,
            isAlpha(target[target.startIndex]),
            target[target.startIndex..<colon].allSatisfy({
                isAlpha($0) || HTTP1Bytes.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E
            }),
            target[colon...].starts(with: "://".utf8),
            target[(colon + 3)...].prefix(while: { $0 != 0x2F && $0 != 0x3F }).allSatisfy(isAuthorityByte)
        else { throw HTTP1ParseError(.invalidTarget) }
        return .absolute
    }
}
