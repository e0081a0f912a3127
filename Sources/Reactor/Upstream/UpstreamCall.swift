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
    /// Past this many bytes queued for the upstream, the client's body is paused…
    static let bodyHighWater = 256 << 10
    /// …and resumed once the queue is down to this.
    static let bodyLowWater = 64 << 10

    /// The request body's progress.
    enum BodyState {
        /// No body, or the body has ended (its last byte is queued).
        case complete
        /// The head went with `Expect: 100-continue`: the body waits for the upstream's 100.
        case awaitingContinue
        case streaming(chunked: Bool, remaining: UInt64?, paused: Bool)
        /// Not sent on (an early response, a failed exchange): chunks are dropped.
        case abandoned
    }

    let pool: UpstreamPool
    let request: Request
    /// Strong, and cleared when the call ends (`finish`, `cancel`): a weak reference would
    /// give the delegate a side table, and every count of it the runtime's slow path.
    var delegate: UpstreamCallDelegate?
    /// Where the call is: connecting, exchanging (the request's and the response's
    /// progress), finished; and whether the delegate paused reading. Unchecked exclusivity:
    /// read and changed on every event of every call, loop-thread only, and the machine's
    /// events call out to nothing (a dynamic check per access cost ~400 instructions a
    /// request in callgrind).
    @exclusivity(unchecked) var machine = UpstreamCallStateMachine()
    var connection: UpstreamConnection?
    /// An HTTP/2 upstream: the call's stream (`UpstreamCall+H2.swift`), instead of a
    /// connection of its own.
    var h2: UpstreamH2Stream?
    /// The connect timeout; on HTTP/2, the wait before a refused stream goes again.
    var connectTimer: LoopTimer?
    /// `Request.deadline`, from `start()` to the end.
    var deadlineTimer: LoopTimer?
    /// Runs while the body waits for a 100 (`Request.continueTimeout`).
    var continueTimer: LoopTimer?
    var body: RequestBody?
    var bodySink: UpstreamBodySink?
    var bodyState = BodyState.complete
    /// An HTTP/2 upstream: the client's trailer fields that go on, sent after the body's
    /// last DATA frame (an HTTP/1.1 upstream gets them in the last chunk at once).
    var requestTrailers: HTTP1Fields?
    /// Inside `start()`: delegate calls are deferred to the next loop turn. A call-stack
    /// fact, not a state of the call.
    var starting = false
    /// Inside the body's `stream` call: body bytes that arrive synchronously wait for the
    /// one write of head and body.
    var queueingBody = false
    /// Streams the HTTP/2 upstream refused unprocessed (REFUSED_STREAM) for this call.
    var refusals = 0
    /// The outcome of an exchange that ended inside `start()`, told on the next loop turn.
    var deferredReport: (() -> Void)?
    /// Keeps self alive while the exchange runs; set in `start`, cleared when it ends.
    var selfRetain: UpstreamCall?

    public init(pool: UpstreamPool, request: consuming Request, delegate: UpstreamCallDelegate) {
        self.pool = pool
        self.request = request
        self.delegate = delegate
    }

    var transport: UpstreamTransport? { connection?.transport }

    /// Sends the request: on an idle keep-alive connection at once (head and the body's
    /// first bytes in one write), else after resolving and connecting. The body starts
    /// streaming now and queues (up to the high-water mark) while connecting.
    public func start() {
        pool.assertOnLoop()
        precondition(machine.isNew, "UpstreamCall.start called twice")
        selfRetain = self
        starting = true
        defer { starting = false }
        if let deadline = request.deadline {
            deadlineTimer = LoopTimer(loop: pool.loop, seconds: max(deadline, 0.001)) { [weak self] in
                self?.finish(.responseTimeout)
            }
        }
        if let body = request.body, let state = Self.streaming(body.framing) {
            self.body = body
            // An upstream known to answer in HTTP/1.0 never sends a 100: the body goes at once
            // (RFC 9110 §10.1.1: "from configuration or past interaction").
            bodyState =
                request.continueTimeout != nil && !pool.answersHTTP10 && !pool.endpoint.http2
                ? .awaitingContinue : state
        }
        if pool.endpoint.http2 {
            startH2()
            return
        }
        attempt(fresh: false)
    }

    /// The body's initial state for its framing; nil: no body.
    static func streaming(_ framing: RequestBodyFraming) -> BodyState? {
        switch framing {
        case .none: nil
        case .length(let n): .streaming(chunked: false, remaining: n, paused: false)
        case .streamed: .streaming(chunked: true, remaining: nil, paused: false)
        }
    }

    var awaitingContinue: Bool {
        if case .awaitingContinue = bodyState { return true }
        return false
    }

    /// Abandons the exchange (the client went away). No delegate call follows; the
    /// connection is closed.
    public func cancel() {
        pool.assertOnLoop()
        deferredReport = nil
        guard !machine.isFinished else { return }
        delegate = nil
        finish(.cancelled)
    }

    /// Flow control: stop reading the upstream while the client is slow (the response
    /// deadline does not run meanwhile).
    public func pause() {
        pool.assertOnLoop()
        guard machine.pause() else { return }
        if machine.isExchanging { transport?.disarmRead() }
    }

    public func resume() {
        pool.assertOnLoop()
        guard machine.resume() else { return }
        if h2 != nil {
            h2Resume()
            return
        }
        guard machine.isExchanging, let transport else { return }
        armRead()
        // What is already in the input buffer is consumed on the next loop turn, not here
        // inside the caller's stack (a delegate resuming from its own drain callback).
        transport.activateRead()
    }

    // MARK: Connecting

    func attempt(fresh: Bool) {
        let conn = pool.acquire(fresh: fresh)
        connection = conn
        conn.parser.expectResponse(toHEAD: request.method == .HEAD)
        machine.connecting()
        request.writeHead(to: conn.transport.output, expectContinue: awaitingContinue)
        if !awaitingContinue {
            startBody()
            guard !machine.isFinished else { return }
        }
        if conn.isOpen {
            _ = machine.connected()
            conn.transport.handler = self
            beginExchange()
        } else {
            connectTimer = LoopTimer(loop: pool.loop, seconds: pool.endpoint.connectTimeout) { [weak self] in
                self?.finish(.connectTimeout)
            }
            conn.open { [weak self] ok in self?.opened(ok) }
        }
    }

    func opened(_ ok: Bool) {
        guard machine.isConnecting, let conn = connection else { return }
        connectTimer?.cancel()
        connectTimer = nil
        guard ok else {
            finish(conn.openFailure.map { .tlsHandshakeFailed(reason: $0) } ?? .connectionFailed)
            return
        }
        _ = machine.connected()
        conn.transport.handler = self
        beginExchange()
    }

    func beginExchange() {
        // Read interest from the start: an early response, or the upstream closing a
        // stale connection, must be seen while the request is still going out.
        if !machine.isPaused { armRead() }
        sendQueued()
        if awaitingContinue, machine.isExchanging, let seconds = request.continueTimeout {
            continueTimer = LoopTimer(loop: pool.loop, seconds: seconds) { [weak self] in self?.proceedWithBody() }
        }
    }

    /// Starts reading the client's body into the request (queued while connecting).
    func startBody() {
        guard let body, bodySink == nil else { return }
        let sink = UpstreamBodySink(call: self)
        bodySink = sink
        queueingBody = true
        body.stream(to: sink, limit: request.bodyLimit)
        queueingBody = false
    }

    /// The upstream said 100 Continue, or was silent for `continueTimeout`: the body goes.
    func proceedWithBody() {
        guard machine.isExchanging, awaitingContinue, let body, let state = Self.streaming(body.framing) else {
            return
        }
        continueTimer?.cancel()
        continueTimer = nil
        bodyState = state
        delegate?.upstreamContinue()
        guard machine.isExchanging else { return }
        startBody()
        guard machine.isExchanging else { return }
        sendQueued()
    }

    /// Read interest, with the response deadline once the upstream owes an answer.
    func armRead() {
        guard let transport else { return }
        let idle = request.idleTimeout ?? pool.endpoint.responseTimeout
        if !transport.armRead(timeout: machine.owesResponse ? idle : nil) {
            finish(.connectionFailed)
        }
    }
}
