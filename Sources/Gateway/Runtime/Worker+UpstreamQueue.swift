import Reactor

/// Requests at an upstream's connection cap (`upstreams.NAME.max_connections`): they wait
/// in the pool's bounded queue (`max_pending`, each at most `pending_timeout`), and past it
/// get `503 temporarily_unavailable` with `Retry-After` (RFC 9110 §15.6.4, §10.2.3) — the
/// upstream never hears of them. A queue entry pins no upstream connection; its body is
/// either not read yet, or (request buffering) already read whole into memory and a temp
/// file within `request_buffer` and `request_spool_total`.
extension Worker {
    /// Seconds a client is told to wait before trying again when an upstream is full.
    static let upstreamRetryAfter = "1"

    /// This worker's pool settings for `up`: its share of the process's `max_connections`
    /// and `max_pending`, split evenly among workers (rounded up, at least one), as
    /// `limits.max_tunnels` is.
    func poolEndpoint(_ up: UpstreamConfig, workers: Int) -> UpstreamEndpoint {
        var endpoint = up.endpoint
        let n = max(1, workers)
        endpoint.maxConnections = max(1, (up.maxConnections + n - 1) / n)
        endpoint.maxPending = (up.maxPending + n - 1) / n
        endpoint.pendingTimeout = up.pendingTimeout
        return endpoint
    }

    /// Queues a request that found its upstream's pool at the cap, or answers 503 when the
    /// queue is full too.
    func waitForUpstream(
        _ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: consuming UpstreamCall.Request
    ) {
        let turn = UpstreamTurn(worker: self, exchange: ex, context: ctx, pool: pool, request: request)
        guard pool.wait(turn) else {
            upstreamBusy(ex, ctx, kind: "pending_full", detail: "upstream at max_connections, its queue full")
            return
        }
        // The client leaving gives up its place (the queue holds the turn until then).
        ex.responder.clientGoneObserver = turn
    }

    /// 503 for a request the upstream had no room for.
    func upstreamBusy(_ ex: ServerExchange, _ ctx: RequestContext, kind: String, detail: String) {
        metrics.upstreamError(kind)
        var response = ErrorResponse.make(
            503, error: "temporarily_unavailable", description: "the upstream is busy; try again shortly",
            requestID: ctx.requestID, headers: [("Retry-After", Self.upstreamRetryAfter)], detail: detail)
        response.reason = "upstream_busy"
        answer(ex, ctx, response)
    }
}

/// One request's place in an upstream pool's queue: started when its turn comes, 503 when
/// the wait runs out, gone (499 in the log) when its client leaves first. Ends once.
final class UpstreamTurn: UpstreamWaiter, ClientGoneObserver {
    private let worker: Worker
    private let exchange: ServerExchange
    private let context: RequestContext
    private let pool: UpstreamPool
    private var request: UpstreamCall.Request?

    init(
        worker: Worker, exchange: ServerExchange, context: RequestContext, pool: UpstreamPool,
        request: UpstreamCall.Request
    ) {
        self.worker = worker
        self.exchange = exchange
        self.context = context
        self.pool = pool
        self.request = request
    }

    /// Takes the request out, once.
    private func take() -> UpstreamCall.Request? {
        let r = request
        request = nil
        if r != nil { exchange.responder.clientGoneObserver = nil }
        return r
    }

    func upstreamRoom() {
        guard let request = take() else { return }
        guard exchange.responder.isConnected else {
            worker.answer(exchange, context, ErrorResponse.clientGone(requestID: context.requestID))
            return
        }
        worker.startProxy(exchange, ctx: context, pool: pool, request: request)
    }

    func upstreamWaitExpired() {
        guard take() != nil else { return }
        worker.upstreamBusy(
            exchange, context, kind: "pending_timeout", detail: "no upstream connection within pending_timeout")
    }

    func clientGone(_ responder: Responder) {
        guard take() != nil else { return }
        pool.stopWaiting(self)
        worker.answer(
            exchange, context,
            ErrorResponse.clientGone(
                requestID: context.requestID, detail: "client gone while waiting for an upstream connection"))
    }
}
