import Reactor

/// The last stage of a proxied request: the upstream request is made from the admission
/// (`UpstreamRequest.swift`), the call starts on a connection the pool has room for
/// (`UpstreamQueueStage` waited for it), and `ProxyExchange` streams the answer back and
/// ends the request. The request is handed on, never copied, from its making to its call:
/// a copy is a retain and a release of each of its buffers.
final class ProxyStage: Stage {
    /// Unowned: the services hold the plans that hold their stages; a request in its chain
    /// holds the services.
    unowned(unsafe) let services: WorkerServices
    let pool: UpstreamPool
    /// The route's `buffering`: the upstream's answer may go to a temp file while the client
    /// is behind.
    let buffersResponse: Bool

    init(services: WorkerServices, plan: RoutePlan, pool: UpstreamPool) {
        self.services = services
        self.pool = pool
        buffersResponse = plan.route.options.buffering.response
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        let ex = request.exchange
        let exchange = ProxyExchange(services: services, exchange: ex, context: ctx, buffersResponse: buffersResponse)
        let upstream = request.forwarding.request(
            request.admitted, ex: ex, ctx: ctx, spooled: request.spooledBody, now: services.wallClock.seconds)
        if ctx.kind.isUpgrade {
            exchange.start(pool: pool, request: Self.upgradeRequest(upstream, ctx))
        } else {
            exchange.start(pool: pool, request: upstream)
        }
        return .suspend
    }

    /// The upgrade request as it goes upstream, with a key of the gateway's own, kept on the
    /// context for the 101's check (`ProxyExchange.upstreamSwitchedProtocols`).
    static func upgradeRequest(_ request: consuming UpstreamCall.Request, _ ctx: RequestContext)
        -> UpstreamCall.Request
    {
        let key = WebSocketHandshake.freshKey()
        ctx.upstreamWebSocketKey = key
        return UpgradeExchange.upstreamRequest(request, key: key)
    }
}
