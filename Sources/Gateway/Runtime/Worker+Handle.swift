import Reactor

/// Where every request enters: its context (`TrustEntry`), then its route's chain, a built-in
/// route's for the gateway's own endpoints and decision calls (`RouteEntry`).
/// docs/architecture.md draws the chains.
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
        RouteEntry(services: services).run(ex, ctx, trusted: trusted, host: host)
    }
}
