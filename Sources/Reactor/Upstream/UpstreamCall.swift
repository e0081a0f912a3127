internal import CEvent

/// Why an upstream exchange failed, as the gateway maps it to 502/504.
public enum UpstreamFailure: Sendable, Equatable {
    case connectTimeout, responseTimeout, connectionFailed, invalidResponse, cancelled
    /// The client's request body did not arrive whole (too large, client gone, malformed,
    /// timed out) while it was being forwarded: the upstream exchange was aborted and its
    /// connection closed. The gateway answers it itself (413 for `.tooLarge` if nothing
    /// was sent to the client yet).
    case clientBodyFailed(RequestBodyFailure)
    /// The TLS handshake with an HTTPS upstream failed; `reason` (the certificate verify
    /// error, such as "certificate has expired", or OpenSSL's) is for the log only.
    case tlsHandshakeFailed(reason: String)

    public var isTimeout: Bool { self == .connectTimeout || self == .responseTimeout }

    /// A fixed name per kind, for metric labels (no reason text).
    public var kind: String {
        switch self {
        case .connectTimeout: "connectTimeout"
        case .responseTimeout: "responseTimeout"
        case .connectionFailed: "connectionFailed"
        case .invalidResponse: "invalidResponse"
        case .cancelled: "cancelled"
        case .clientBodyFailed(let why): "clientBodyFailed(\(why))"
        case .tlsHandshakeFailed: "tlsHandshakeFailed"
        }
    }
}

/// Receives the events of one upstream exchange, in order: `interim`*, `head`, `body`*,
/// then exactly one of `complete` or `failed`. None comes from inside `UpstreamCall.start()`
/// or after `cancel()`.
public protocol UpstreamCallDelegate: AnyObject {
    func upstreamHead(_ head: HTTPResponseHead)
    /// An interim response (1xx other than 100 and 101), before the head.
    func upstreamInterim(_ head: HTTPResponseHead)
    func upstreamBody(_ chunk: BodyChunk)
    func upstreamComplete()
    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool)
    /// A `101` to a request that asked to upgrade (`Request.upgrade`): the connection now
    /// belongs to the delegate as a tunnel side (what the upstream sent after the head is in
    /// its input). Ends the call: nothing else follows.
    func upstreamSwitchedProtocols(_ head: HTTPResponseHead, _ upstream: TunnelEndpoint)
}

extension UpstreamCallDelegate {
    /// A delegate that never asks to upgrade gets no 101 (the call answers it with
    /// `invalidResponse`); this closes a side given anyway.
    public func upstreamSwitchedProtocols(_ head: HTTPResponseHead, _ upstream: TunnelEndpoint) { upstream.close() }
}

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
public final class UpstreamCall: UpstreamTransportHandler {
    public struct Request {
        public var method: HTTPMethod
        public var target: String
        /// The request's fields (Content-Length is set by the call itself).
        public var fields: HTTP1Fields
        /// The body to send, if any: read from it only when the call starts.
        public var body: RequestBody?
        /// The request carries `Connection: upgrade` and `Upgrade` (its fields say which): a
        /// `101` hands the connection over (`upstreamSwitchedProtocols`). Without it a 101
        /// is a protocol error (RFC 9110 §15.2.2: a server sends 101 only to an Upgrade).
        public var upgrade = false
        public init(method: HTTPMethod, target: String, fields: HTTP1Fields, body: RequestBody?) {
            self.method = method
            self.target = target
            self.fields = fields
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
        case streaming(chunked: Bool, remaining: UInt64?, paused: Bool)
        /// Not sent on (an early response, a failed exchange): chunks are dropped.
        case abandoned
    }

    private let pool: UpstreamPool
    private let request: Request
    private weak var delegate: UpstreamCallDelegate?
    private var phase = Phase.new
    private var connection: UpstreamConnection?
    private var connectTimer: LoopTimer?
    private var parser: HTTP1ResponseParser
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

    public init(pool: UpstreamPool, request: Request, delegate: UpstreamCallDelegate) {
        self.pool = pool
        self.request = request
        self.delegate = delegate
        parser = HTTP1ResponseParser(limits: pool.limits)
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
        if let body = request.body {
            switch body.framing {
            case .none: break
            case .length(let n):
                self.body = body
                bodyState = .streaming(chunked: false, remaining: n, paused: false)
            case .streamed:
                self.body = body
                bodyState = .streaming(chunked: true, remaining: nil, paused: false)
            }
        }
        attempt(fresh: false)
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
        parser = HTTP1ResponseParser(limits: pool.limits)
        parser.expectResponse(toHEAD: request.method == .HEAD)
        receivedBytes = false
        requestSent = false
        request.writeHead(to: conn.transport.output)
        if let body, bodySink == nil {
            let sink = UpstreamBodySink(call: self)
            bodySink = sink
            queueingBody = true
            body.stream(to: sink)
            queueingBody = false
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
        guard case .streaming = bodyState else { return }
        bodyState = .abandoned
        body?.pause()
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
        while phase == .exchanging && !paused {
            var vector = iovec()
            let length = evbuffer_get_length(input)
            if length > 0 { evbuffer_peek(input, -1, nil, &vector, 1) }
            let bytes = UnsafeRawBufferPointer(
                start: length > 0 ? vector.iov_base : nil, count: length > 0 ? vector.iov_len : 0)
            let step: (consumed: Int, event: HTTP1ResponseParser.Event?)
            do throws(HTTP1ParseError) {
                step = try parser.parse(bytes)
            } catch {
                finish(.invalidResponse)
                return
            }
            guard let event = step.event else {
                if step.consumed == 0 { return }
                evbuffer_drain(input, step.consumed)
                continue
            }
            switch event {
            case .informational(let head):
                evbuffer_drain(input, step.consumed)
                // 100 Continue answers an Expect this call never sends on its own: dropped.
                if head.status != 100 { delegate?.upstreamInterim(responseHead(head)) }
            case .head(let head):
                evbuffer_drain(input, step.consumed)
                received(head)
            case .body(let range):
                // Framing before the data (a chunk line) is dropped; then the data is handed
                // over in place, and the delegate moves exactly `range.count` bytes.
                evbuffer_drain(input, range.lowerBound)
                let before = evbuffer_get_length(input)
                delegate?.upstreamBody(BodyChunk(buffer: input, count: range.count))
                let unmoved = evbuffer_get_length(input) + range.count - before
                if unmoved > 0 { evbuffer_drain(input, unmoved) }
                evbuffer_drain(input, step.consumed - range.upperBound)
            case .end:
                evbuffer_drain(input, step.consumed)
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
            if case .end? = try parser.finish() {
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
            pool.discard(conn)
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
        let delegate = self.delegate
        self.delegate = nil
        let afterHead = gotHead
        let report = {
            switch failure {
            case nil: delegate?.upstreamComplete()
            case .cancelled?: break
            case let failure?: delegate?.upstreamFailed(failure, afterHead: afterHead)
            }
        }
        if starting {
            // Never from inside start(): the caller has not finished setting up. A cancel()
            // before the next loop turn still silences it.
            deferredReport = report
            pool.loop.execute { [self] in
                let report = deferredReport
                deferredReport = nil
                report?()
            }
        } else {
            report()
        }
        selfRetain = nil
    }
}

/// The gateway's view of a parsed upstream head (its fields keep the head's one buffer).
private func responseHead(_ head: HTTP1ResponseHead) -> HTTPResponseHead {
    HTTPResponseHead(status: head.status, reason: head.reason, fields: head.fields)
}

/// The call's side of the client's body stream. The engine holds the sink; the sink holds
/// the call weakly, so a body the client never finishes does not keep the call alive, and
/// chunks that come after the call ended are dropped (the receiver must move them).
private final class UpstreamBodySink: RequestBodySink {
    weak var call: UpstreamCall?
    init(call: UpstreamCall) { self.call = call }

    func requestBody(_ chunk: BodyChunk) {
        if let call { call.bodyChunk(chunk) } else { evbuffer_drain(chunk.buffer, chunk.count) }
    }

    func requestBodyEnd() { call?.bodyEnded() }
    func requestBodyFailed(_ failure: RequestBodyFailure) { call?.bodyFailed(failure) }
}
