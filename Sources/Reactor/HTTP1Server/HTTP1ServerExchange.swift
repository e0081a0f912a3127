/// One request on an HTTP/1.1 connection as the seam sees it: the `ResponseTransport` its
/// responder answers through (`+Response`) and the `RequestBody` the gateway reads
/// (`+Body`), writing to and reading from its connection's `HTTP1ConnectionHandler`. Holds
/// the handler (and so the connection) only while the exchange is on it: once its answer is
/// written out or the connection closes, the exchange is detached and inert (`isConnected`
/// false, every call a no-op). Loop-thread only.
final class HTTP1ServerExchange: ResponseTransport, RequestBody {
    /// How the response body is framed on the wire.
    enum ResponseFraming {
        /// HEAD, 204, 304: body bytes given are dropped.
        case none
        case length(remaining: UInt64)
        case chunked
        /// HTTP/1.0 without Content-Length: the body ends when the connection closes.
        case untilClose
    }

    enum ResponseState {
        case waiting
        case streaming(ResponseFraming)
        /// Every byte of the answer is in the output.
        case handedOff
    }

    /// nil once detached.
    var handler: HTTP1ConnectionHandler?
    /// What the engine reads of the request's head: how its body is framed and what its
    /// answer may do. The head itself goes on to the layer above; a copy kept here was one
    /// more owner of its field buffer (a retain and a release, both atomic, per request).
    struct RequestFraming {
        let version: HTTP1Version
        let framing: HTTP1Framing
        let keepAlive: Bool
        let expectsContinue: Bool
    }

    let request: RequestFraming
    let isHEAD: Bool
    var responder: Responder?
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) var response = ResponseState.waiting
    /// The connection closes after this answer (decided when its head is written, or later).
    @exclusivity(unchecked) var closeAfter = false
    /// Connection bytes written when the answer's last byte is out (set at hand-off).
    @exclusivity(unchecked) var flushMark: UInt64 = 0
    /// Unchecked exclusivity: loop-thread state, never mutated across a callback.
    @exclusivity(unchecked) var drainedActions: [() -> Void] = []

    /// The request body's reader: who takes it, what came, its limits, its pace.
    @exclusivity(unchecked) var body = RequestBodyReader()

    init(handler: HTTP1ConnectionHandler, request: borrowing HTTP1RequestHead) {
        self.handler = handler
        self.request = RequestFraming(
            version: request.version, framing: request.framing, keepAlive: request.keepAlive,
            expectsContinue: request.expectsContinue)
        isHEAD = request.method == "HEAD"
    }

    /// This exchange's handler, while it is the connection's current one.
    var active: HTTP1ConnectionHandler? {
        guard let handler, handler.current === self else { return nil }
        return handler
    }

    // MARK: ResponseTransport

    var isConnected: Bool { handler.map { !$0.connection.isClosed && !$0.isClosing } ?? false }
    var pendingOutput: Int { handler?.pendingOutput ?? 0 }
    func attach(_ responder: Responder) { self.responder = responder }

    /// The client is gone and `transportClosed` was reported at close: nothing to release.
    func discardResponse() {}

    func switchProtocols(_ head: HTTPResponseHead) -> TunnelEndpoint? {
        guard let handler = active else { return nil }
        return handler.switchProtocols(self, head)
    }

    func whenDrained(_ action: @escaping () -> Void) {
        guard let handler else { return }
        if handler.pendingOutput == 0 { action() } else { drainedActions.append(action) }
    }

    // MARK: RequestBody

    var framing: RequestBodyFraming {
        switch request.framing {
        case .none: .none
        case .contentLength(let n): n == 0 ? .none : .length(n)
        case .chunked, .untilClose: .streamed
        }
    }

    var expectsContinue: Bool {
        guard request.expectsContinue, !body.continueSent, !body.complete, case .waiting = response else {
            return false
        }
        return true
    }

    // MARK: from the handler

    /// The answer's last byte is written: report it and let go of the handler.
    func flushed() {
        handler = nil
        drainedActions = []
        responder.take()?.transportFlushed()
    }

    /// The connection closed first.
    func connectionClosed() {
        handler = nil
        drainedActions = []
        responder.take()?.transportClosed()
    }
}
