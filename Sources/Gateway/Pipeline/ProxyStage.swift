import Reactor

/// The last stage of a proxied request: the upstream request is made from the admission
/// (`UpstreamRequest.swift`), the call starts on a connection the pool has room for
/// (`UpstreamQueueStage` waited for it), and `ProxyExchange` streams the answer back and
/// ends the request. The request is handed on, never copied, from its making to its call:
/// a copy is a retain and a release of each of its buffers.
final class ProxyStage: Stage {
    let pool: UpstreamPool
    /// The route's `buffering`: the upstream's answer may go to a temp file while the client
    /// is behind.
    let buffersResponse: Bool

    init(plan: RoutePlan, pool: UpstreamPool) {
        self.pool = pool
        buffersResponse = plan.route.options.buffering.response
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        let ex = request.exchange
        let services = request.services
        var upstream = request.forwarding.request(
            request.admitted, ex: ex, ctx: ctx, spooled: request.spooledBody, now: services.wallClock.seconds)
        let wait = services.config.limits.continueTimeout
        if upstream.body?.expectsContinue == true, wait > 0 {
            // RFC 9110 §10.1.1: a proxy forwards the expectation and lets the origin decide
            // whether the body is wanted; the client hears the upstream's 100 (`upstreamContinue`),
            // or its final answer without having sent the body. A silent upstream gets the body
            // after `limits.continue_timeout` (curl waits 1 s too; a client may send without a 100).
            upstream.continueTimeout = wait
        }
        if let body = upstream.body, body === ex.body, body.framing != .none {
            // The client's own body streams upstream: a gRPC call's is bounded per message.
            upstream.bodyLimit = RequestBodyLimit.of(ex.head.fields, limits: services.config.limits, readWhole: false)
        }
        if let timeout = ctx.state[GRPCDeadline.Key.self] {
            // A gRPC call's deadline bounds its upstream call too: past it the client has
            // given up, and the upstream's work would be for nobody.
            upstream.deadline = timeout.seconds
        }
        // Made once the request is: making it may install a response stage (a DPoP-bound
        // token's nonce retry), and the exchange takes the chain as it stands.
        let exchange = ProxyExchange(services: services, exchange: ex, context: ctx, buffersResponse: buffersResponse)
        if ctx.kind.isUpgrade {
            exchange.start(pool: pool, request: Self.upgradeRequest(consume upstream, ctx))
        } else {
            exchange.start(pool: pool, request: consume upstream)
        }
        return .suspend
    }

    /// The upgrade request as it goes upstream, with a key of the gateway's own, kept on the
    /// context for the 101's check (`ProxyExchange.upstreamSwitchedProtocols`).
    static func upgradeRequest(_ request: consuming UpstreamCall.Request, _ ctx: RequestContext)
        -> UpstreamCall.Request
    {
        let key = WebSocketHandshake.freshKey()
        ctx.tunnel.upstreamKey = key
        return UpgradeExchange.upstreamRequest(request, key: key)
    }
}
