import Reactor

/// Where every request enters: its context (`TrustEntry`), then a decision's entry or the
/// route's chain (`RouteEntry`). docs/architecture.md draws the chains.
extension Worker {
    func handle(_ ex: ServerExchange) {
        // In flight until its last byte is written (or its client is gone): a drain must not
        // stop the loop with a finished reply still in the socket buffer.
        metrics.inflight += 1
        ex.responder.observer = self
        let trust = TrustEntry(services: services)
        let trusted = trust.peerTrusted(ex.connection)
        let host = ex.head.fields.firstAndCount("Host")
        let ctx = trust.context(ex, trusted: trusted, host: host.first, start: services.clock())
        defer { services.tracer?.current = nil }
        // Decision mode (nginx auth_request, forwardAuth, ext_authz HTTP and gRPC): the same
        // chains, with a verdict for their last stage (Decision/).
        if services.current.decisionEnabled {
            let target = ex.head.target
            if config.decision.extAuthzGRPC, target == ExtAuthzService.checkPath {
                ExtAuthzService(services: services, verdict: extAuthzVerdict).serve(ex, ctx: ctx, trusted: trusted)
                return
            }
            if let kind = DecisionEndpoint.kind(target, config.decision) {
                DecisionEndpoint(services: services, verdict: verdict).decide(
                    ex, kind, forwarded: ctx.forwarded, trusted: trusted, ctx: ctx)
                return
            }
        }
        RouteEntry(services: services).run(ex, ctx, trusted: trusted, host: host)
    }
}
