import Glibc

/// HTTP/1.1 on one client connection: feeds the connection's input to a strict
/// `HTTP1RequestParser` in place, one exchange at a time (a pipelined request waits in the
/// input until the answer before it is in the output), and owns the connection's deadlines.
/// Request bodies (`+Body`) are read only when the gateway asks; responses are framed by
/// the exchange (`HTTP1ServerExchange+Response`). Re-entrancy: the gateway may answer, read
/// or pause from inside any callback; `drive()` then only notes that there is more to do.
/// Loop-thread only.
final class HTTP1ConnectionHandler: ServerConnectionHandler {
    /// What the one connection deadline currently means.
    enum Deadline {
        case none
        /// A whole head is due (408 if some of it came, else a silent close).
        case header
        /// Keep-alive with nothing asked: close silently.
        case idle
        /// A body being read has been silent too long.
        case body
        /// The client is not taking the output.
        case send
    }

    let connection: ServerConnection
    let context: ServerContext
    // Unchecked exclusivity (here and on the properties below marked so): loop-thread state
    // whose mutations never overlap (no caller holds an access across a callback); the
    // dynamic check cost a runtime call per access on the request path.
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) var parser: HTTP1RequestParser
    /// The exchange being served: its body is read through here and its answer is not yet
    /// wholly in the output (or its body is still being discarded after it).
    @exclusivity(unchecked) private(set) var current: HTTP1ServerExchange?
    /// Exchanges whose answer is in the output, not yet written, in order.
    @exclusivity(unchecked) var unflushed: [HTTP1ServerExchange] = []
    /// No more requests: the connection closes once the output is written.
    @exclusivity(unchecked) private(set) var isClosing = false
    @exclusivity(unchecked) var deadline = Deadline.none
    /// When the body's silence bound passes (monotonic seconds), while `deadline` is `.body`.
    @exclusivity(unchecked) var bodySilenceAt = 0.0
    var thread = LoopThread()
    private var headStarted = false
    private var firstRequest = true
    @exclusivity(unchecked) private var driving = false
    @exclusivity(unchecked) private var driveAgain = false

    /// Bytes of a body the gateway did not read that are read and dropped to keep the
    /// connection; past that, it closes after the answer.
    static let discardLimit = 64 << 10
    /// A pipelined request is not parsed while more output than this is unwritten.
    static let outputHighWater = 256 << 10

    init(connection: ServerConnection, context: ServerContext) {
        self.connection = connection
        self.context = context
        parser = HTTP1RequestParser(limits: context.limits)
        thread.bind()
        // The first head is due from the accept on.
        setDeadline(.header)
        connection.setReading(true)
        // Nothing received yet: reclaimable at the connection limit until a byte comes.
        context.idle.append(connection)
    }

    var input: ByteQueue { connection.input }
    var pendingOutput: Int { connection.output.count }

    // MARK: the state machine

    /// Makes every step the current state allows: parse a head, deliver body bytes, move
    /// to the next request. Called from every event; re-entrant calls only ask for a rerun.
    func drive() {
        if driving {
            driveAgain = true
            return
        }
        driving = true
        repeat {
            driveAgain = false
            guard !isClosing, !connection.isClosed else { break }
            // Not `current.map(exchangeStep)`: the closure retained self as well as the
            // exchange, an atomic retain and release per step.
            if let ex = current {
                if exchangeStep(ex) { driveAgain = true }
            } else if headStep() {
                driveAgain = true
            }
        } while driveAgain
        driving = false
        updateReading()
        updateIdle()
    }

    /// Joins or leaves the server's idle list (the connections reclaimed at the limit):
    /// idle means between requests with no byte of the next head received, nothing left to
    /// write and nothing unanswered, so a reclaim loses no request and no answer (RFC 9112
    /// §9.8: a server may close an idle connection at any time; a client retries on a new
    /// one). A TLS handshake in progress counts as idle: it has sent no request byte yet.
    private func updateIdle() {
        let idle =
            current == nil && !isClosing && !connection.isClosed && unflushed.isEmpty
            && parser.isIdle && input.count == 0 && pendingOutput == 0
        // Called after every step, and most find the state unchanged: then no call at all.
        guard idle != connection.idleLinks.isLinked else { return }
        context.idle.set(connection, idle: idle)
    }

    private func updateReading() {
        guard !isClosing, !connection.isClosed else { return }
        var want = true
        if let ex = current, !ex.body.complete, ex.body.paused { want = false }
        connection.setReading(want)
    }

    /// The first contiguous run of the input.
    func firstSegment() -> UnsafeRawBufferPointer { input.front }

    private func headStep() -> Bool {
        guard input.count > 0, pendingOutput <= Self.outputHighWater else { return false }
        let started = headStarted
        headStarted = true
        var consumed = 0
        let event: HTTP1RequestParser.Event?
        do {
            event = try parser.next(firstSegment(), consumed: &consumed)
        } catch {
            refuse(status: error.status, description: Self.description(of: error.code))
            return false
        }
        input.drain(consumed)
        if case .head(let head) = consume event {
            startExchange(head)
        } else if !started && !firstRequest {
            // A head is due from its first byte on; one that arrived whole needed no deadline.
            setDeadline(.header)
        }
        return true
    }

    private func startExchange(_ head: consuming HTTP1RequestHead) {
        setDeadline(.none)
        let ex = HTTP1ServerExchange(handler: self, request: head)
        current = ex
        if ex.framing == .none {
            // An absent or empty body ends at once (see the parser's contract).
            if case .end? = try? parser.parse(UnsafeRawBufferPointer(start: nil, count: 0)).event {
                ex.body.complete = true
            }
        }
        let exchange = ServerExchange(
            head: Self.requestHead(head), connection: connection.info, body: ex,
            transport: ex)
        context.handler(exchange)
    }

    /// The head as the gateway sees it. The parsed head's field buffer is swapped out, not
    /// copied: a copy (and the parsed head's destruction after it) was one more owner of
    /// the buffer, an atomic retain and release per request.
    private static func requestHead(_ head: consuming HTTP1RequestHead) -> HTTPRequestHead {
        var fields = HTTP1Fields()
        let target = head.target
        swap(&fields, &head.fields)
        let method = head.method
        return HTTPRequestHead(
            method: HTTPMethod(rawValue: method), methodName: method, target: target,
            version: head.version == .http10 ? (1, 0) : (1, 1), fields: fields,
            listsConnectionOptions: head.listsConnectionOptions)
    }

    private func exchangeStep(_ ex: HTTP1ServerExchange) -> Bool {
        var progress = false
        if !ex.body.complete, wantsBody(ex) {
            progress = bodyStep(ex)
        }
        guard current === ex, !isClosing, !connection.isClosed, case .handedOff = ex.response else { return progress }
        if ex.closeAfter {
            closeAfterOutput()
            return false
        }
        if ex.body.complete {
            finishExchange()
            return true
        }
        return progress
    }

    /// The exchange is over on the input side: the next request may be parsed.
    private func finishExchange() {
        current = nil
        firstRequest = false
        headStarted = false
        // An idle keep-alive connection, from the end of the answer; a pipelined head that
        // is already here gets the header deadline when it is parsed.
        setDeadline(input.count > 0 ? .none : .idle)
    }

    /// No more requests on this connection: close once the output is written.
    func closeAfterOutput() {
        guard !isClosing else { return }
        isClosing = true
        context.idle.remove(connection)
        setDeadline(.none)
        // The client may still be sending: unread input, a body not read to its end, a
        // head cut short.
        let mayStillSend = input.count > 0 || !parser.isIdle || current.map { !$0.body.complete } == true
        connection.finish(linger: mayStillSend)
    }

    /// Answers a request the parser refused (or a head that came too late) and closes. The
    /// gateway never sees such a request.
    func refuse(status: Int, description: String) {
        let (head, body) = Self.refusal(status: status, description: description)
        HTTP1ResponseEncoder.appendHead(
            head, contentLength: UInt64(body.count),
            chunked: false, persistence: .close, date: context.dates.fieldLine, to: connection.output)
        connection.output.append(body)
        closeAfterOutput()
    }

    /// The answer to a request the engine refuses itself, whatever the protocol: a JSON
    /// body with a fixed phrase (what is wrong, never the bytes that were).
    static func refusal(status: Int, description: String) -> (HTTPResponseHead, [UInt8]) {
        var fields = HTTP1Fields()
        fields.append("Content-Type", "application/json")
        let body = Array("{\"error\":\"invalid_request\",\"error_description\":\"\(description)\"}".utf8)
        return (HTTPResponseHead(status: status, fields: fields), body)
    }

    // MARK: switching protocols

    /// Answers `101` to the current exchange and hands the connection to a tunnel: no more
    /// HTTP is read on it, and what the client sent after the request head stays in the
    /// input as the tunnel's first bytes (RFC 9110 §7.8: after the 101 "the server
    /// switches to the protocol … immediately after the empty line"). Only an HTTP/1.1
    /// request whose body (none) is complete qualifies: any body byte would be ambiguous.
    func switchProtocols(_ ex: HTTP1ServerExchange, _ head: HTTPResponseHead) -> TunnelEndpoint? {
        thread.check()
        guard current === ex, case .waiting = ex.response, ex.body.complete, ex.request.version == .http11,
            !isClosing, !connection.isClosed
        else { return nil }
        let bytes = HTTP1ResponseEncoder.switchingProtocols(head, date: context.dates.fieldLine)
        connection.output.append(bytes)
        ex.response = .handedOff
        isClosing = true
        // A tunnel is never reclaimed (it was not idle either: the upgrade was in flight).
        context.idle.remove(connection)
        setDeadline(.none)
        current = nil
        // Answers before this one are in the output ahead of the 101: done as far as their
        // exchanges go, since the connection is no longer this handler's to report on.
        let earlier = unflushed
        unflushed = []
        let endpoint = ClientTunnelEndpoint(connection: connection)
        connection.handler = endpoint
        for e in earlier { e.flushed() }
        ex.handler = nil
        ex.responder = nil
        // Written at the end of this loop turn, once the tunnel listens: a failure then
        // reaches it.
        connection.scheduleFlush()
        return endpoint
    }

    // MARK: deadlines

    func setDeadline(_ kind: Deadline) {
        deadline = kind
        let options = context.options
        switch kind {
        case .none: connection.setDeadline(nil)
        case .header: connection.setDeadline(options.headerTimeout)
        case .idle, .send: connection.setDeadline(options.idleTimeout)
        case .body:
            let now = LazyDeadline.now()
            bodySilenceAt = now + options.bodyTimeout
            armBodyDeadline(now: now)
        }
    }

    /// The body's deadline: the silence bound, or the pace's next check if it comes first.
    func armBodyDeadline(now: Double) {
        var at = bodySilenceAt
        if let pace = current?.body.paceNextAt, pace < at { at = pace }
        connection.setDeadline(max(0, at - now))
    }

    func connectionDeadline(_ connection: ServerConnection) {
        thread.check()
        let kind = deadline
        deadline = .none
        switch kind {
        case .none:
            break
        case .header:
            if current == nil, headStarted {
                refuse(status: 408, description: "request head not received in time")
            } else {
                connection.close()
            }
        case .idle, .send:
            connection.close()
        case .body:
            // Stays the body's deadline unless the body ends or fails in there.
            deadline = .body
            bodyDeadlinePassed()
            if deadline == .body, current?.body.complete != false { deadline = .none }
        }
    }

    // MARK: connection events

    func connectionReadable(_ connection: ServerConnection) {
        thread.check()
        drive()
    }

    func connectionPeerClosed(_ connection: ServerConnection) {
        thread.check()
        drive()
        guard !isClosing, !connection.isClosed else { return }
        // A client that half-closed after its last request still gets the answers already
        // in the output; one that left mid-request or before its answer is gone.
        if current == nil && parser.isIdle && !unflushed.isEmpty {
            closeAfterOutput()
        } else if let ex = current, case .handedOff = ex.response {
            closeAfterOutput()
        } else {
            connection.close()
        }
    }

    func connectionWrote(_ connection: ServerConnection) {
        thread.check()
        // Each written exchange moves out of the list (not copied, then removed).
        while let mark = unflushed.first?.flushMark, mark <= connection.bytesWritten {
            unflushed.removeFirst().flushed()
        }
        guard !connection.isClosed else { return }
        if pendingOutput == 0 {
            if deadline == .send { setDeadline(.none) }
            if let ex = current, !ex.drainedActions.isEmpty {
                let actions = ex.drainedActions
                ex.drainedActions = []
                for action in actions { action() }
            }
        } else if deadline == .none || deadline == .send {
            setDeadline(.send)
        }
        if current == nil, input.count > 0 { drive() }
        updateIdle()
    }

    func connectionClosed(_ connection: ServerConnection) {
        thread.check()
        isClosing = true
        context.idle.remove(connection)
        deadline = .none
        let ex = current
        current = nil
        if let ex { failBody(ex, .clientGone) }
        let pending = unflushed
        unflushed = []
        for e in pending { e.connectionClosed() }
        if let ex, !pending.contains(where: { $0 === ex }) { ex.connectionClosed() }
    }

    /// A fixed phrase per refusal: what is wrong, never the bytes that were.
    static func description(of code: HTTP1ParseError.Code) -> String {
        switch code {
        case .requestLineTooLong: "request line too long"
        case .tooManyHeaders, .headerSectionTooLarge: "request header fields too large"
        case .unsupportedVersion: "HTTP version not supported"
        case .http2Preface: "HTTP/2 is not served on this port"
        case .unsupportedTransferCoding: "transfer coding not implemented"
        case .unsupportedExpectation: "expectation not supported"
        case .contentLengthWithTransferEncoding, .multipleContentLength, .invalidContentLength,
            .invalidTransferEncoding, .transferEncodingOnHTTP10:
            "invalid message framing"
        case .missingHost, .multipleHost: "invalid Host header"
        case .invalidMethod: "invalid method"
        case .invalidTarget: "invalid request target"
        case .invalidVersion, .http09: "invalid HTTP version"
        case .obsFold, .missingColon, .emptyFieldName, .whitespaceBeforeColon, .invalidFieldName,
            .invalidFieldValue:
            "invalid header field"
        default: "malformed request"
        }
    }
}
