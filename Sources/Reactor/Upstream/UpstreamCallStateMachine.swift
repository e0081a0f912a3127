/// The life of one `UpstreamCall` as states rather than flags, after async-http-client's
/// `HTTPRequestStateMachine`: connecting, then exchanging (the request's progress beside
/// the response's, since an upstream may answer while the request is still going out), then
/// finished. Each event is a `mutating func`; where the event leaves the call something to
/// do, it returns that as an action. It touches no socket, timer or delegate, so every
/// transition is unit-tested on its own (`UpstreamCallStateMachineTests`); `UpstreamCall`
/// does what the actions say.
struct UpstreamCallStateMachine {
    /// How far the request got on the current attempt.
    enum RequestProgress: Equatable {
        /// The head and the body so far are queued or going out.
        case sending
        /// Head and body fully written (HTTP/2: the stream's request side ended).
        case sent
        /// Sending stopped before the end: the upstream answered first (RFC 9112 §9.3), or
        /// the write failed. Nothing more goes out, and the connection is not reused.
        case cut
    }

    /// How far the response got on the current attempt.
    enum ResponseProgress: Equatable {
        /// Not a byte yet: a reused connection lost now was stale (see `connectionLost`).
        case silent
        /// Some bytes, no final head yet.
        case partial
        /// The final head came (its `keepAlive` says whether the connection may be reused);
        /// its body streams.
        case head(keepAlive: Bool)
    }

    private enum State: Equatable {
        case new
        /// Resolving and connecting (HTTP/1.1), or waiting for the stream to be submitted or
        /// to go again (HTTP/2).
        case connecting
        case exchanging(RequestProgress, ResponseProgress)
        case finished
    }

    /// A call goes again at most once after its connection was lost: a stale keep-alive
    /// connection, or an HTTP/2 connection that closed as the request went.
    private enum Attempt { case first, again }

    /// The delegate's flow control: while paused, the upstream is not read.
    private enum Reading { case on, paused }

    /// What the call does next about reading the upstream.
    enum ReadAction: Equatable {
        case none
        /// Arm read interest, with the response deadline (the upstream now owes an answer).
        case armRead
    }

    /// What the call does with a final head (HTTP/1.1).
    struct HeadAction: Equatable {
        /// The request was still going out: stop sending and drop what is queued.
        var stopSending: Bool
        var armRead: Bool
    }

    /// What the call does when the connection under it is lost before the response ended.
    enum LostAction: Equatable {
        /// Open a new connection (or stream) and send the request again.
        case retry
        case fail
    }

    /// What becomes of the connection after a complete response.
    enum Reuse: Equatable {
        /// Back to the pool for the next request.
        case pool
        case close
    }

    /// What the call does as it ends.
    enum FinishAction: Equatable {
        /// It had already ended: nothing.
        case none
        /// Release what it holds and tell the delegate; `afterHead`: a failure came after
        /// the final head (the client's answer has started).
        case report(afterHead: Bool)
    }

    private var state = State.new
    private var attempt = Attempt.first
    private var reading = Reading.on

    var isNew: Bool { state == .new }
    var isConnecting: Bool { state == .connecting }
    var isFinished: Bool { state == .finished }
    var isExchanging: Bool {
        if case .exchanging = state { return true }
        return false
    }
    var isPaused: Bool { reading == .paused }
    /// Exchanging and not paused: the response is read.
    var readsResponse: Bool { isExchanging && reading == .on }

    var request: RequestProgress? {
        if case .exchanging(let request, _) = state { return request }
        return nil
    }

    var response: ResponseProgress? {
        if case .exchanging(_, let response) = state { return response }
        return nil
    }

    /// The final head came on this attempt.
    var gotHead: Bool {
        if case .head = response { return true }
        return false
    }

    /// The whole request went out.
    var requestSent: Bool { request == .sent }

    /// The upstream owes an answer (the request is out, or its answer started): reading runs
    /// on the response deadline.
    var owesResponse: Bool { requestSent || gotHead }

    // MARK: Events

    /// An attempt starts: the first, or one going again. Its progress starts afresh.
    mutating func connecting() {
        precondition(state != .finished, "an upstream call attempted after it ended")
        state = .connecting
    }

    /// The connection is open (HTTP/2: the stream was submitted). false: not connecting (a
    /// late callback), nothing to do.
    mutating func connected() -> Bool {
        guard state == .connecting else { return false }
        state = .exchanging(.sending, .silent)
        return true
    }

    /// A write finished. With the body complete and nothing left queued, the request is sent,
    /// and the response deadline starts. `outputPending` is read after the write's own
    /// callbacks: a body resumed inside one may have queued more than the write took.
    mutating func written(bodyComplete: Bool, outputPending: Bool) -> ReadAction {
        guard case .exchanging(.sending, let response) = state, bodyComplete, !outputPending else { return .none }
        state = .exchanging(.sent, response)
        return reading == .on ? .armRead : .none
    }

    /// HTTP/2: the stream's request side ended (its last DATA frame went).
    mutating func requestEnded() {
        guard case .exchanging(.sending, let response) = state else { return }
        state = .exchanging(.sent, response)
    }

    /// Writing failed (the upstream is gone or reset the connection): sending stops, and
    /// the read side tells a response that came first from a connection that died.
    mutating func writeFailed() -> ReadAction {
        guard case .exchanging(_, let response) = state else { return .none }
        state = .exchanging(.cut, response)
        return reading == .on ? .armRead : .none
    }

    /// A read brought bytes.
    mutating func bytesReceived() {
        guard case .exchanging(let request, .silent) = state else { return }
        state = .exchanging(request, .partial)
    }

    /// HTTP/1.1's final head. Before the whole request went, it is an early response (RFC
    /// 9112 §9.3): sending stops, and the connection closes after it.
    mutating func headReceived(keepAlive: Bool) -> HeadAction {
        guard case .exchanging(let request, _) = state else { return HeadAction(stopSending: false, armRead: false) }
        let early = request == .sending
        state = .exchanging(early ? .cut : request, .head(keepAlive: keepAlive))
        return HeadAction(stopSending: early, armRead: reading == .on)
    }

    /// HTTP/2's final head: no early refusal, since a bidirectional stream (gRPC's) answers
    /// as it reads; only a response that ends first stops the body (RFC 9113 §8.1).
    mutating func streamHeadReceived() {
        guard case .exchanging(let request, _) = state else { return }
        state = .exchanging(request, .head(keepAlive: true))
    }

    /// A 101: taken only in answer to a request that asked to upgrade and went out whole
    /// (to any other it is a protocol error, and the bytes after it are not HTTP). Taken,
    /// the call is over: the connection belongs to the tunnel.
    mutating func switchingProtocols(upgradeRequested: Bool) -> Bool {
        guard upgradeRequested, requestSent else { return false }
        state = .finished
        return true
    }

    /// The response ended. The connection may be reused only when the head said keep-alive,
    /// the whole request went out, and nothing is left unread (bytes after a complete
    /// response belong to no request).
    mutating func responseEnded(inputEmpty: Bool) -> Reuse {
        guard case .exchanging(let request, .head(let keepAlive)) = state, keepAlive, request == .sent, inputEmpty
        else { return .close }
        return .pool
    }

    /// The connection (or the HTTP/2 connection under the stream) was lost before the
    /// response ended. It goes again once when the caller says the request may
    /// (`mayGoAgain`: bodiless, idempotent, on a connection that served before) and the
    /// upstream said nothing on this attempt: it closed a connection it held idle.
    mutating func connectionLost(mayGoAgain: Bool) -> LostAction {
        guard mayGoAgain, attempt == .first, response == .silent else { return .fail }
        attempt = .again
        return .retry
    }

    /// HTTP/2: the stream goes again (refused unprocessed, RFC 9113 §8.7); it counts as the
    /// one retry a lost connection may have.
    mutating func streamGoesAgain() {
        attempt = .again
        state = .connecting
    }

    /// The delegate pauses reading. true: it was reading, and read interest is dropped.
    mutating func pause() -> Bool {
        guard reading == .on else { return false }
        reading = .paused
        return true
    }

    /// The delegate resumes reading. true: it was paused.
    mutating func resume() -> Bool {
        guard reading == .paused else { return false }
        reading = .on
        return true
    }

    /// The call ends, once.
    mutating func finish() -> FinishAction {
        guard state != .finished else { return .none }
        let afterHead = gotHead
        state = .finished
        return .report(afterHead: afterHead)
    }
}
