import Reactor

/// Handing an admitted request to its upstream pool: refused when announced too large or
/// when its client has gone, its body read first where the route buffers requests
/// (Worker+RequestBuffering), queued at the pool's cap, else proxied at once.
extension Worker {
    /// The upgrade request as it goes upstream, with a key of the gateway's own, kept on the
    /// context for the 101's check (`ProxyExchange.upstreamSwitchedProtocols`).
    func upgradeRequest(_ request: consuming UpstreamCall.Request, _ ctx: RequestContext)
        -> UpstreamCall.Request
    {
        let key = WebSocketHandshake.freshKey()
        ctx.upstreamWebSocketKey = key
        return UpgradeExchange.upstreamRequest(request, key: key)
    }

    func forward(
        _ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: consuming UpstreamCall.Request
    ) {
        if case .length(let n) = request.body?.framing, n > UInt64(config.limits.maxBodySize) {
            // Announced too large: refused before the upstream hears of it, nothing read.
            answer(
                ex, ctx,
                ErrorResponse.make(
                    413, error: "invalid_request", description: "the request body is too large",
                    requestID: ctx.requestID), close: true)
            return
        }
        guard ex.responder.isConnected else {
            // The client left while the gateway was deciding (keys, introspection, a session).
            answer(ex, ctx, ErrorResponse.clientGone(requestID: ctx.requestID))
            return
        }
        if readsBodyFirst(request, ex, ctx, pool: pool) {
            readBodyFirst(ex, ctx: ctx, pool: pool, request: request)
            return
        }
        handOn(ex, ctx: ctx, pool: pool, request: request)
    }

    /// Starts the call on the pool, or queues it at the pool's cap (503 past the queue).
    func handOn(
        _ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: consuming UpstreamCall.Request
    ) {
        guard pool.hasRoom else {
            waitForUpstream(ex, ctx: ctx, pool: pool, request: request)
            return
        }
        startProxy(ex, ctx: ctx, pool: pool, request: request)
    }

    /// Proxies the request on a connection the pool has room for. The request is handed on,
    /// never copied, from its making to its call: a copy is a retain and a release of each
    /// of its buffers.
    func startProxy(
        _ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: consuming UpstreamCall.Request
    ) {
        ProxyExchange(worker: self, exchange: ex, context: ctx)
            .start(pool: pool, request: ctx.upgrade ? upgradeRequest(request, ctx) : request)
    }
}
