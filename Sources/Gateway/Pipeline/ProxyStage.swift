import Reactor

/// The last stage of a proxied request: the call starts on a connection the pool has room
/// for (`UpstreamQueueStage` waited for it), and `ProxyExchange` streams the answer back and
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
        buffersResponse = plan.route.options.buffering
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        var upstream: UpstreamCall.Request? = nil
        swap(&upstream, &request.upstreamRequest)
        guard let upstream else { preconditionFailure("RequestBufferingStage made the upstream request") }
        let ctx = request.context
        ProxyExchange(services: services, exchange: request.exchange, context: ctx, buffersResponse: buffersResponse)
            .start(pool: pool, request: ctx.kind.isUpgrade ? Self.upgradeRequest(upstream, ctx) : upstream)
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
