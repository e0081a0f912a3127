internal import CEvent

/// One request to an upstream over a pooled keep-alive connection: sends the head and
/// streams the body with backpressure, parses the response strictly (`HTTP1ResponseParser`)
/// and streams it to its delegate as it arrives, with a connect deadline (resolving
/// included) and an idle deadline on the response (and on a stalled send).
///
/// A bodiless idempotent request that fails on a reused keep-alive connection before any
/// response byte (the upstream closed it while idle) is retried once on a new connection.
/// A connection goes back to the pool only after a complete keep-alive response with
/// nothing unread and the whole request sent; any doubt closes it. Loop-thread only; alive
/// from `start()` until it ends (it holds itself).
///
/// With `Request.continueTimeout` the head goes alone, with `Expect: 100-continue`, and the
/// body is read from the client only once the upstream says `100 Continue` (or is silent
/// that long: RFC 9110 §10.1.1 lets a client send anyway). A final answer first ends the
/// request without its body. A 100 the call did not ask for is dropped.
public final class UpstreamCall: UpstreamTransportHandler {
    public struct Request {
        public var method: HTTPMethod
        public var target: String
        /// The request's fields (Content-Length is set by the call itself).
        public var fields: HTTP1Fields
        /// A proxied request: the client's fields passed on, sent before `fields` (framing
        /// fields and Expect aside, as there).
        public var forwarded: HTTP1ForwardedFields?
        /// The body to send, if any: read from it only when the call starts.
        public var body: RequestBody?
        /// The request carries `Connection: upgrade` and `Upgrade` (its fields say which): a
        /// `101` hands the connection over (`upstreamSwitchedProtocols`). Without it a 101
        /// is a protocol error (RFC 9110 §15.2.2: a server sends 101 only to an Upgrade).
        public var upgrade = false
        /// Ask the upstream before sending the body (RFC 9110 §10.1.1): the head carries
        /// `Expect: 100-continue`, and the body follows the upstream's 100, or this many
        /// seconds without an answer. nil: the body goes with the head.
        public var continueTimeout: Double?
        public init(
            method: HTTPMethod, target: String, fields: HTTP1Fields, forwarded: HTTP1ForwardedFields? = nil,
            body: RequestBody?
        ) {
            self.method = method
            self.target = target
            self.fields = fields
            self.forwarded = forwarded
            self.body = body
        }
    }

    /// Past this many bytes queued for the upstream, the client's body is paused…
    static let bodyHighWater = 256 << 10
    /// …and resumed once the queue is down to this.
    static let bodyLowWater = 64 << 10

    private enum Phase { case new, opening, exchanging, finished }

    /// The request body's progress.
    private enum BodyState {
        /// No body, or the body has ended (its last byte is queued).
        case complete
        /// The head went with `Expect: 100-continue`: the body waits for the upstream's 100.
        case awaitingContinue
        case streaming(chunked: Bool, remaining: UInt64?, paused: Bool)
        /// Not sent on (an early response, a failed exchange): chunks are dropped.
        case abandoned
    }

    private let pool: UpstreamPool
    private let request: Request
    /// Strong, and cleared when the call ends (`finish`, `cancel`): a weak reference would
    /// give the delegate a side table, and every count of it the runtime's slow path.
    private var delegate: UpstreamCallDelegate?
    private var phase = Phase.new
    private var connection: UpstreamConnection?
    private var connectTimer: LoopTimer?
    /// Runs while the body waits for a 100 (`Request.continueTimeout`).
    private var continueTimer: LoopTimer?
    private var body: RequestBody?
    private var bodySink: UpstreamBodySink?
    private var bodyState = BodyState.complete
    /// Inside `start()`: delegate calls are deferred to the next loop turn, and body bytes
    /// that arrive synchronously wait for the one write of head and body.
    private var starting = false
    private var queueingBody = false
    private var gotHead = false
    private var keepAlive = false
    /// The final head came while the request was still being sent.
    private var earlyResponse = false
    /// Head and body fully written to the socket.
    private var requestSent = false
    /// This attempt received at least one byte.
    private var receivedBytes = false
    private var retried = false
    private var paused = false
    /// The outcome of an exchange that ended inside `start()`, told on the next loop turn.
    private var deferredReport: (() -> Void)?
    /// Keeps self alive while the exchange runs; set in `start`, cleared when it ends.
    private var selfRetain: UpstreamCall?

    public init(pool: UpstreamPool, request: consuming Request, delegate: UpstreamCallDelegate) {
        self.pool = pool
        self.request = request
        self.delegate = delegate
    }

    private var transport: UpstreamTransport? { connection?.transport }

    /// Sends the request: on an idle keep-alive connection at once (head and the body's
    /// first bytes in one write), else after resolving and connecting. The body starts
    /// streaming now and queues (up to the high-water mark) while connecting.
    public func start() {
        pool.assertOnLoop()
        precondition(phase == .new, "UpstreamCall.start called twice")
        selfRetain = self
        starting = true
        defer { starting = false }
        if let body = request.body, let state = Self.streaming(body.framing) {
            self.body = body
            // An upstream known to answer in HTTP/1.0 never sends a 100: the body goes at once
            // (RFC 9110 §10.1.1: "from configuration or past interaction").
            bodyState = request.continueTimeout != nil && !pool.answersHTTP10 ? .awaitingContinue : state
        }
        attempt(fresh: false)
    }

    /// The body's initial state for its framing; nil: no body.
    private static func streaming(_ framing: RequestBodyFraming) -> BodyState? {
        switch framing {
        case .none: nil
        case .length(let n): .streaming(chunked: false, remaining: n, paused: false)
        case .streamed: .streaming(chunked: true, remaining: nil, paused: false)
        }
    }

    private var awaitingContinue: Bool {
        if case .awaitingContinue = bodyState { return true }
        return false
    }

    /// Abandons the exchange (the client went away). No delegate call follows; the
    /// connection is closed.
    public func cancel() {
        pool.assertOnLoop()
        deferredReport = nil
        guard phase != .finished else { return }
        delegate = nil
        finish(.cancelled)
    }

    /// Flow control: stop reading the upstream while the client is slow (the response
    /// deadline does not run meanwhile).
    public func pause() {
        pool.assertOnLoop()
        guard !paused else { return }
        paused = true
        if phase == .exchanging { transport?.disarmRead() }
    }

    public func resume() {
        pool.assertOnLoop()
        guard paused else { return }
        paused = false
        guard phase == .exchanging, let transport else { return }
        armRead()
        // What is already in the input buffer is consumed on the next loop turn, not here
        // inside the caller's stack (a delegate resuming from its own drain callback).
        transport.activateRead()
    }

    // MARK: Connecting

    private func attempt(fresh: Bool) {
        let conn = pool.acquire(fresh: fresh)
        connection = conn
        conn.parser.expectResponse(toHEAD: request.method == .HEAD)
        receivedBytes = false
        requestSent = false
        request.writeHead(to: conn.transport.output, expectContinue: awaitingContinue)
        if !awaitingContinue {
            startBody()
            guard phase != .finished else { return }
        }
        if conn.isOpen {
            phase = .exchanging
            conn.transport.handler = self
            beginExchange()
        } else {
            phase = .opening
            connectTimer = LoopTimer(loop: pool.loop, seconds: pool.endpoint.connectTimeout) { [weak self] in
                self?.finish(.connectTimeout)
            }
            conn.open { [weak self] ok in self?.opened(ok) }
        }
    }

    private func opened(_ ok: Bool) {
        guard phase == .opening, let conn = connection else { return }
        connectTimer?.cancel()
        connectTimer = nil
        guard ok else {
            finish(conn.openFailure.map { .tlsHandshakeFailed(reason: $0) } ?? .connectionFailed)
            return
        }
        phase = .exchanging
        conn.transport.handler = self
        beginExchange()
    }

    private func beginExchange() {
        // Read interest from the start: an early response, or the upstream closing a
        // stale connection, must be seen while the request is still going out.
        if !paused { armRead() }
        sendQueued()
        if awaitingContinue, phase == .exchanging, let seconds = request.continueTimeout {
            continueTimer = LoopTimer(loop: pool.loop, seconds: seconds) { [weak self] in self?.proceedWithBody() }
        }
    }

    /// Starts reading the client's body into the request (queued while connecting).
    private func startBody() {
        guard let body, bodySink == nil else { return }
        let sink = UpstreamBodySink(call: self)
        bodySink = sink
        queueingBody = true
        body.stream(to: sink)
        queueingBody = false
    }

    /// The upstream said 100 Continue, or was silent for `continueTimeout`: the body goes.
    private func proceedWithBody() {
        guard phase == .exchanging, awaitingContinue, let body, let state = Self.streaming(body.framing) else {
            return
        }
        continueTimer?.cancel()
        continueTimer = nil
        bodyState = state
        delegate?.upstreamContinue()
        guard phase == .exchanging else { return }
        startBody()
        guard phase == .exchanging else { return }
        sendQueued()
    }

    /// Read interest, with the response deadline once the upstream owes an answer.
    private func armRead() {
        guard let transport else { return }
        if !transport.armRead(timeout: requestSent || gotHead ? pool.endpoint.responseTimeout : nil) {
            finish(.connectionFailed)
        }
    }

    // MARK: Sending

    private var bodyComplete: Bool {
        if case .complete = bodyState { return true }
        return false
    }

    /// Writes what is queued; arms the response deadline once the whole request is out.
    private func sendQueued() {
        guard phase == .exchanging, !earlyResponse, let transport else { return }
        switch transport.flush(timeout: pool.endpoint.responseTimeout) {
        case .done:
            resumeBodyIfDrained(transport)
            if bodyComplete && !requestSent {
                requestSent = true
                if !paused { armRead() }
            }
        case .pending:
            resumeBodyIfDrained(transport)
        case .failed:
            // The upstream is gone or reset the connection: stop sending and let the read
            // side tell a response that came first from a connection that died (and
            // whether a retry applies).
            abandonBody()
            transport.disarmWrite()
            evbuffer_drain(transport.output, transport.pendingOutput)
            if !paused && !transport.armRead(timeout: pool.endpoint.responseTimeout) { finish(.connectionFailed) }
        }
    }

    private func resumeBodyIfDrained(_ transport: UpstreamTransport) {
        guard case .streaming(let chunked, let remaining, true) = bodyState,
            transport.pendingOutput <= Self.bodyLowWater
        else { return }
        bodyState = .streaming(chunked: chunked, remaining: remaining, paused: false)
        body?.resume()
    }

    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool) {
        if timedOut {
            finish(.responseTimeout)
            return
        }
        sendQueued()
    }

    func transportConnected(_ transport: UpstreamTransport, error: Int32) {}

    fileprivate func bodyChunk(_ chunk: BodyChunk) {
        guard case .streaming(let chunked, let remaining, let bodyPaused) = bodyState, let transport else {
            evbuffer_drain(chunk.buffer, chunk.count)
            return
        }
        guard chunk.count > 0 else { return }
        var left = remaining
        if let r = remaining {
            // More than the Content-Length we announced would be read as the next request.
            guard UInt64(chunk.count) <= r else {
                evbuffer_drain(chunk.buffer, chunk.count)
                finish(.clientBodyFailed(.malformed))
                return
            }
            left = r - UInt64(chunk.count)
        }
        if chunked { UpstreamBodyFraming.writeChunkLine(chunk.count, to: transport.output) }
        chunk.move(to: transport.output)
        if chunked { UpstreamBodyFraming.write("\r\n", to: transport.output) }
        var nowPaused = bodyPaused
        if !bodyPaused && left != 0 && transport.pendingOutput > Self.bodyHighWater {
            nowPaused = true
            body?.pause()
        }
        // The last byte of a Content-Length body completes the request on the wire, whenever
        // the engine gets round to `requestBodyEnd`: an answer from now on is not early.
        bodyState = left == 0 ? .complete : .streaming(chunked: chunked, remaining: left, paused: nowPaused)
        // A body we paused must be let run to its end, or the engine never finishes it.
        if left == 0 && bodyPaused { body?.resume() }
        if !queueingBody { sendQueued() }
    }

    fileprivate func bodyEnded() {
        guard case .streaming(let chunked, let remaining, _) = bodyState, let transport else { return }
        guard remaining ?? 0 == 0 else {
            finish(.clientBodyFailed(.malformed))
            return
        }
        if chunked { UpstreamBodyFraming.write("0\r\n\r\n", to: transport.output) }
        bodyState = .complete
        if !queueingBody { sendQueued() }
    }

    fileprivate func bodyFailed(_ failure: RequestBodyFailure) {
        guard case .streaming = bodyState else { return }
        bodyState = .abandoned
        finish(.clientBodyFailed(failure))
    }

    /// Stops forwarding the client's body: the engine keeps it paused (what it already
    /// read stays unread), and the client's connection cannot carry another request.
    private func abandonBody() {
        continueTimer?.cancel()
        continueTimer = nil
        switch bodyState {
        case .streaming:
            bodyState = .abandoned
            body?.pause()
        case .awaitingContinue:
            // Never asked for: the client, still waiting for a 100, sends nothing more.
            bodyState = .abandoned
        case .complete, .abandoned:
            break
        }
    }

    // MARK: Receiving

    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool) {
        guard phase == .exchanging else { return }
        if timedOut {
            finish(.responseTimeout)
            return
        }
        let outcome = transport.fill()
        if case .bytes = outcome { receivedBytes = true }
        consumeInput(transport)
        guard phase == .exchanging, !paused else { return }
        switch outcome {
        case .eof: endOfStream()
        case .failed: connectionLost()
        case .bytes, .wouldBlock: break
        }
    }

    /// Feeds the input to the parser, one event at a time, until it needs more bytes, the
    /// delegate pauses, or the exchange ends.
    private func consumeInput(_ transport: UpstreamTransport) {
        let input = transport.input
        while phase == .exchanging && !paused, let conn = connection {
            var vector = iovec()
            let length = evbuffer_get_length(input)
            if length > 0 { evbuffer_peek(input, -1, nil, &vector, 1) }
            let bytes = UnsafeRawBufferPointer(
                start: length > 0 ? vector.iov_base : nil, count: length > 0 ? vector.iov_len : 0)
            var consumed = 0
            let next: HTTP1ResponseParser.Event?
            do throws(HTTP1ParseError) {
                next = try conn.parser.next(bytes, consumed: &consumed)
            } catch {
                finish(.invalidResponse)
                return
            }
            guard let event = consume next else {
                if consumed == 0 { return }
                evbuffer_drain(input, consumed)
                continue
            }
            switch consume event {
            case .informational(let head):
                evbuffer_drain(input, consumed)
                if head.status != 100 {
                    delegate?.upstreamInterim(responseHead(head))
                } else if awaitingContinue {
                    // The answer to the head's Expect. Any other 100 answers nothing: dropped.
                    proceedWithBody()
                }
            case .head(let head):
                evbuffer_drain(input, consumed)
                received(head)
            case .body(let range):
                // Framing before the data (a chunk line) is dropped; then the data is handed
                // over in place, and the delegate moves exactly `range.count` bytes.
                evbuffer_drain(input, range.lowerBound)
                let before = evbuffer_get_length(input)
                delegate?.upstreamBody(BodyChunk(buffer: input, count: range.count))
                let unmoved = evbuffer_get_length(input) + range.count - before
                if unmoved > 0 { evbuffer_drain(input, unmoved) }
                evbuffer_drain(input, consumed - range.upperBound)
            case .end:
                evbuffer_drain(input, consumed)
                complete(transport)
            }
        }
    }

    private func received(_ head: HTTP1ResponseHead) {
        if head.status == 101 {
            // To a request without Upgrade a 101 is a protocol error, and the bytes after it
            // are not HTTP.
            if request.upgrade && requestSent { switchedProtocols(head) } else { finish(.invalidResponse) }
            return
        }
        gotHead = true
        keepAlive = head.keepAlive
        pool.answersHTTP10 = head.version == .http10
        if !requestSent {
            // RFC 9112 §9.3: the upstream answered before reading the whole request. Stop
            // sending; the connection is closed after the response.
            earlyResponse = true
            abandonBody()
            if let transport {
                transport.disarmWrite()
                evbuffer_drain(transport.output, transport.pendingOutput)
            }
        }
        if !paused { armRead() }
        delegate?.upstreamHead(responseHead(head))
    }

    /// The 101: the connection leaves the pool for the tunnel, and the call ends.
    private func switchedProtocols(_ head: HTTP1ResponseHead) {
        guard let conn = connection else {
            finish(.invalidResponse)
            return
        }
        phase = .finished
        connection = nil
        conn.served += 1
        pool.detach(conn)
        let endpoint = UpstreamTunnelEndpoint(connection: conn)
        let delegate = self.delegate
        self.delegate = nil
        body = nil
        if let delegate { delegate.upstreamSwitchedProtocols(responseHead(head), endpoint) } else { endpoint.close() }
        selfRetain = nil
    }

    private func complete(_ transport: UpstreamTransport) {
        // Reused only when the response said so, the whole request went out, and nothing is
        // left unread: bytes after a complete response belong to no request.
        let reusable = keepAlive && requestSent && !earlyResponse && evbuffer_get_length(transport.input) == 0
        finish(nil, reusable: reusable)
    }

    /// The upstream closed the connection: the end of a close-delimited body, or a failure.
    private func endOfStream() {
        do throws(HTTP1ParseError) {
            if case .end? = try connection?.parser.finish() {
                finish(nil)
            } else {
                connectionLost()
            }
        } catch {
            connectionLost()
        }
    }

    private func connectionLost() {
        if let conn = connection, conn.served > 0, !receivedBytes, !gotHead, !retried,
            body == nil, request.method.isIdempotent
        {
            // A stale keep-alive connection: the upstream closed it while it was idle.
            retried = true
            connection = nil
            pool.release(conn, reusable: false)
            attempt(fresh: true)
            return
        }
        finish(.connectionFailed)
    }

    // MARK: Ending

    /// Ends the exchange once: the connection back to the pool (`reusable`) or closed, the
    /// body abandoned, then the delegate told (`nil`: complete).
    private func finish(_ failure: UpstreamFailure?, reusable: Bool = false) {
        guard phase != .finished else { return }
        phase = .finished
        connectTimer?.cancel()
        connectTimer = nil
        if let conn = connection {
            connection = nil
            conn.served += 1
            pool.release(conn, reusable: failure == nil && reusable)
        }
        abandonBody()
        body = nil
        bodySink?.call = nil
        bodySink = nil
        let delegate = self.delegate
        self.delegate = nil
        let afterHead = gotHead
        if starting {
            // Never from inside start(): the caller has not finished setting up. A cancel()
            // before the next loop turn still silences it.
            deferredReport = { Self.report(failure, to: delegate, afterHead: afterHead) }
            pool.loop.execute { [self] in
                let report = deferredReport
                deferredReport = nil
                report?()
            }
        } else {
            Self.report(failure, to: delegate, afterHead: afterHead)
        }
        selfRetain = nil
    }

    private static func report(_ failure: UpstreamFailure?, to delegate: UpstreamCallDelegate?, afterHead: Bool) {
        switch failure {
        case nil: delegate?.upstreamComplete()
        case .cancelled?: break
        case let failure?: delegate?.upstreamFailed(failure, afterHead: afterHead)
        }
    }
}

/// The gateway's view of a parsed upstream head (its fields keep the head's one buffer).
/// The reason phrase only when it is not the standard one for the status (no string for the
/// usual "OK"), and the body's length when the framing says it.
private func responseHead(_ head: HTTP1ResponseHead) -> HTTPResponseHead {
    var out = HTTPResponseHead(status: head.status, reason: head.nonstandardReason, fields: head.fields)
    if case .contentLength(let n) = head.framing { out.bodyLength = n }
    out.listsConnectionOptions = head.listsConnectionOptions
    return out
}

/// The call's side of the client's body stream. The engine holds the sink; the sink holds
/// the call only until the call ends (`finish` clears it), so a body the client never
/// finishes does not keep the call alive, and chunks that come after the call ended are
/// dropped (the receiver must move them).
private final class UpstreamBodySink: RequestBodySink {
    var call: UpstreamCall?
    init(call: UpstreamCall) { self.call = call }

    func requestBody(_ chunk: BodyChunk) {
        if let call { call.bodyChunk(chunk) } else { evbuffer_drain(chunk.buffer, chunk.count) }
    }

    func requestBodyEnd() { call?.bodyEnded() }
    func requestBodyFailed(_ failure: RequestBodyFailure) { call?.bodyFailed(failure) }
}
