/// The one way to answer one request, exactly once: a whole response (`respond`), or a
/// streamed one (`startStreaming`, `write`…, `finish` or `abort`). It also owns the
/// accounting that used to be reconciled by hand: its one `observer` hears `completed`
/// exactly once, when the last byte of the answer is written (`flushed: true`) or when the
/// connection goes away first (`flushed: false`), and `clientGone` once if the client left
/// before the answer was complete. Answering a client that is gone is allowed and sends
/// nothing, so every path can end through the same door. Loop-thread only.
///
/// Not final only so that `ServerExchange` can be one (one object per request instead of
/// two); every member is final.
public class Responder {
    public enum State: Equatable, Sendable {
        case waiting, streaming, answered
    }

    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) public final private(set) var state = State.waiting
    /// The response fields built up before the answer (the gateway adds its own here).
    /// Unchecked exclusivity: loop-thread only; written before the answer, read when it goes.
    @exclusivity(unchecked) public final var fields = HTTP1Fields()
    /// A proxied answer: the upstream's fields passed on, written before `fields`.
    @exclusivity(unchecked) public final var forwarded: HTTP1ForwardedFields?
    /// One field written after `fields` without a section of its own (`HTTPResponseHead.lastField`).
    @exclusivity(unchecked) public final var lastField: (name: StaticString, value: String)?
    /// The one party told how the exchange ends (`ResponderObserver`), held until it
    /// completes. The layer above chains what it needs behind it: its per-request accounting
    /// (requests in flight, a drain), then whoever is producing the answer and must stop
    /// when the client leaves (an upstream call, a place in a queue), who passes
    /// `completed` on to the one it took the place of (`ResponderObserver` says how).
    @exclusivity(unchecked) public final var observer: (any ResponderObserver)?
    private final let transport: ResponseTransport
    /// How far the exchange's end was told: not yet, the client gone, completed.
    private enum Ending { case open, clientGone, completed }
    @exclusivity(unchecked) private final var ending = Ending.open
    /// The status of the answer, for logs (0 until answered).
    @exclusivity(unchecked) public final private(set) var status = 0

    public init(transport: ResponseTransport) {
        self.transport = transport
        transport.attach(self)
    }

    deinit {
        // Every request must be answered (a response, an abort, or a gone client): an
        // exchange dropped on the floor would leave its connection waiting forever.
        assert(state == .answered, "a request was dropped without an answer")
    }

    public final var isConnected: Bool { transport.isConnected }
    public final var pendingOutput: Int { transport.pendingOutput }
    /// Past this much pending output a streaming producer pauses (the transport's say).
    public final var highWater: Int { transport.highWater }

    /// A whole response. `close`: the connection closes after it. `trailersOnly`: a gRPC
    /// trailers-only answer, whose body is empty (`HTTPResponseHead.trailersOnly`).
    public final func respond(
        status: Int, reason: String? = nil, body: [UInt8] = [], close: Bool = false, trailersOnly: Bool = false
    ) {
        precondition(state == .waiting, "answered twice")
        precondition(!trailersOnly || body.isEmpty, "a trailers-only answer has no body")
        state = .answered
        self.status = status
        guard transport.isConnected else {
            transport.discardResponse()
            complete(flushed: false)
            return
        }
        var head = HTTPResponseHead(
            status: status, reason: reason, fields: fields, forwarded: forwarded, lastField: lastField)
        head.trailersOnly = trailersOnly
        transport.sendResponse(head, body: body, close: close)
    }

    /// The fields built up so far, handed over (a caller putting a head together itself,
    /// `startStreaming(_:close:)`); the responder keeps none.
    public final func takeFields() -> HTTP1Fields {
        var taken = HTTP1Fields()
        swap(&taken, &fields)
        return taken
    }

    /// An interim response (1xx other than 101) before the final one.
    public final func sendInterim(_ head: HTTPResponseHead) {
        precondition(state == .waiting && head.status >= 100 && head.status < 200 && head.status != 101)
        if transport.isConnected { transport.sendInterim(head) }
    }

    /// The head of a streamed response (its body comes through `write`). `bodyLength`:
    /// the body's length when known (else the fields' Content-Length, else chunked).
    public final func startStreaming(status: Int, reason: String? = nil, bodyLength: UInt64? = nil, close: Bool = false)
    {
        // The head takes the fields (nothing reads them once it is written): no copy.
        startStreaming(
            HTTPResponseHead(
                status: status, reason: reason, fields: takeFields(), forwarded: forwarded.take(), lastField: lastField,
                bodyLength: bodyLength),
            close: close)
    }

    /// The same with a head the caller put together whole (a proxied answer: the upstream's
    /// fields, the gateway's, the request id), so none of it is stored here first and taken
    /// out again: every reference in a head moved twice was a retain and a release more.
    /// `fields`, `forwarded` and `lastField` set on the responder are not sent.
    public final func startStreaming(_ head: consuming HTTPResponseHead, close: Bool = false) {
        precondition(state == .waiting, "answered twice")
        state = .streaming
        status = head.status
        guard transport.isConnected else { return }
        transport.startResponse(head, close: close)
    }

    /// Moves `chunk` to the client; `drained` (if given) runs once the output is written
    /// out, so a producer can pause until then.
    public final func write(_ chunk: BodyChunk, drained: (() -> Void)? = nil) {
        precondition(state == .streaming)
        guard transport.isConnected else { return }
        transport.sendBody(chunk)
        if let drained { transport.whenDrained(drained) }
    }

    /// Runs `action` once the connection's output is written out (at once if it is; never if
    /// the client is gone, which `transportClosed` reports instead).
    public final func whenDrained(_ action: @escaping () -> Void) {
        guard transport.isConnected else { return }
        transport.whenDrained(action)
    }

    /// Answers `101 Switching Protocols` and hands the connection over (see
    /// `ResponseTransport.switchProtocols`). The exchange is answered and complete either
    /// way; nil means the connection could not be handed over (the caller closes its other
    /// side).
    public final func switchProtocols(_ head: HTTPResponseHead) -> TunnelEndpoint? {
        precondition(state == .waiting && head.status == 101, "a 101 after another answer")
        guard transport.isConnected, let endpoint = transport.switchProtocols(head) else {
            state = .answered
            status = 502
            if transport.isConnected {
                transport.abortResponse()
            } else {
                transport.discardResponse()
                complete(flushed: false)
            }
            return nil
        }
        state = .answered
        status = 101
        // The exchange is over: the connection now belongs to the tunnel.
        complete(flushed: true)
        return endpoint
    }

    /// Ends a streamed response normally.
    /// Trailer fields to send with the end of a streamed body (before `finish`); dropped
    /// where the protocol has no place for them.
    public final func trailers(_ fields: HTTP1Fields) {
        guard state == .streaming, transport.isConnected else { return }
        transport.sendTrailers(fields)
    }

    public final func finish() {
        precondition(state == .streaming)
        state = .answered
        if transport.isConnected {
            transport.endResponse()
        } else {
            transport.discardResponse()
            complete(flushed: false)
        }
    }

    /// Ends a response abnormally (or answers nothing): the connection is cut, so a client
    /// can tell a streamed body was truncated.
    public final func abort() {
        guard state != .answered else { return }
        state = .answered
        if transport.isConnected {
            transport.abortResponse()
        } else {
            transport.discardResponse()
            complete(flushed: false)
        }
    }

    // MARK: from the transport

    /// The whole answer is written to the socket.
    public final func transportFlushed() { complete(flushed: true) }

    /// The connection went away (before the answer was fully written).
    public final func transportClosed() {
        guard ending == .open else { return }
        if state != .answered {
            ending = .clientGone
            observer?.clientGone(self)
        }
        if state == .answered { complete(flushed: false) }
    }

    private final func complete(flushed: Bool) {
        guard ending != .completed else { return }
        ending = .completed
        // Moved out (`take()`), not copied then cleared: a copy was an atomic retain and
        // release more per request.
        observer.take()?.completed(self, flushed: flushed)
    }
}

/// Hears how a responder's exchange ends (see `Responder.observer`). An observer that takes
/// the place of another (`takeObserver(_:)`) passes `completed` on to it, so that each party
/// the layer above put in the chain hears it; one that only counts (not the answer's
/// producer) passes `clientGone` on too, so the producer hears it wherever it stands.
public protocol ResponderObserver: AnyObject {
    /// Once: the answer was fully written (`flushed`), or the connection went away.
    func completed(_ responder: Responder, flushed: Bool)
    /// At most once, before `completed`: the client went away before the answer was
    /// complete (an exchange streaming from an upstream cancels it).
    func clientGone(_ responder: Responder)
}

extension ResponderObserver {
    public func clientGone(_ responder: Responder) {}
}

extension Responder {
    /// Puts `observer` in front of the one set so far, and returns that one: `observer`
    /// passes `completed` on to it (and gives the place back, `observer = previous`, if it
    /// leaves the chain before the end).
    public final func takeObserver(_ observer: any ResponderObserver) -> (any ResponderObserver)? {
        let previous = self.observer
        self.observer = observer
        return previous
    }
}
