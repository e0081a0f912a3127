import Reactor

/// Requests at an upstream's connection cap (`upstreams.NAME.max_connections`): they wait
/// in the pool's bounded queue (`max_pending`, each at most `pending_timeout`), and past it
/// get `503 temporarily_unavailable` with `Retry-After` (RFC 9110 §15.6.4, §10.2.3) — the
/// upstream never hears of them. A queue entry pins no upstream connection; its body is
/// either not read yet, or (request buffering) already read whole into memory and a temp
/// file within `request_buffer` and `request_spool_total`.
final class UpstreamQueueStage: Stage {
    let pool: UpstreamPool

    init(pool: UpstreamPool) {
        self.pool = pool
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        if pool.hasRoom { return .proceed }
        let turn = UpstreamTurn(request, pool: pool)
        guard pool.wait(turn) else {
            return .answer(
                Self.busy(
                    request.services, request.context, kind: "pending_full",
                    detail: "upstream at max_connections, its queue full"))
        }
        // The client leaving gives up its place (the queue holds the turn until then).
        turn.nextObserver = request.exchange.responder.takeObserver(turn)
        return .suspend
    }

    /// 503 for a request the upstream had no room for.
    static func busy(_ services: WorkerServices, _ ctx: RequestContext, kind: String, detail: String)
        -> GatewayResponse
    {
        services.metrics.upstreamError(kind)
        var response = ErrorResponse.make(
            503, error: "temporarily_unavailable", description: "the upstream is busy; try again shortly",
            requestID: ctx.requestID, headers: [("Retry-After", WorkerServices.upstreamRetryAfter)], detail: detail)
        response.reason = "upstream_busy"
        return response
    }
}

/// One request's place in an upstream pool's queue: its chain goes on when its turn comes,
/// 503 when the wait runs out, gone (499 in the log) when its client leaves first. Ends once.
final class UpstreamTurn: UpstreamWaiter, ResponderObserver {
    private var request: RoutedRequest?
    private let pool: UpstreamPool
    /// The responder's observer before the turn took its place, given back when the turn ends.
    var nextObserver: (any ResponderObserver)?

    init(_ request: RoutedRequest, pool: UpstreamPool) {
        self.request = request
        self.pool = pool
    }

    /// Takes the request out, once.
    private func take() -> RoutedRequest? {
        let r = request
        request = nil
        if let r, r.exchange.responder.observer === self { r.exchange.responder.observer = nextObserver.take() }
        return r
    }

    func upstreamRoom() {
        guard let request = take() else { return }
        guard request.exchange.responder.isConnected else {
            request.answer(ErrorResponse.clientGone(requestID: request.context.requestID))
            return
        }
        request.resume()
    }

    func upstreamWaitExpired() {
        guard let request = take() else { return }
        request.answer(
            UpstreamQueueStage.busy(
                request.services, request.context, kind: "pending_timeout",
                detail: "no upstream connection within pending_timeout"))
    }

    /// Not reached while the turn waits (the client leaving comes first, and gives the place
    /// back); passed on all the same.
    func completed(_ responder: Responder, flushed: Bool) {
        nextObserver.take()?.completed(responder, flushed: flushed)
    }

    func clientGone(_ responder: Responder) {
        guard let request = take() else { return }
        pool.stopWaiting(self)
        request.answer(
            ErrorResponse.clientGone(
                requestID: request.context.requestID, detail: "client gone while waiting for an upstream connection"))
    }
}
