import Reactor

/// What a worker tells the admin endpoints: its metrics and its part of the status page
/// (each read on its loop).
extension Worker {
    func snapshot() -> MetricsSnapshot {
        var s = metrics.snapshot(
            upstreamConnections: pools.mapValues { $0.openConnections },
            clientConnections: servers.reduce(0) { $0 + $1.openConnections },
            tokenCache: (tokens.cacheHits, tokens.cacheMisses))
        s.dpopUnchecked = services.authentication.authenticator.uncheckedProofs
        s.acceptPauses = servers.reduce(0) { $0 + $1.acceptPauses }
        s.connectionsReclaimed = servers.reduce(0) { $0 + $1.reclaimedConnections }
        s.upstreamTLSHandshakes = retiredTLSHandshakes
        for (name, pool) in pools where pool.endpoint.tls != nil {
            s.upstreamTLSHandshakes[name, default: .init()].add(pool)
        }
        s.tunnels = services.proxying.tunnels.metrics
        s.modules = services.modules.metrics
        return s
    }

    func statusSnapshot() -> WorkerStatus {
        let now = services.clock()
        var s = WorkerStatus()
        s.generations = [services.current.generation]
        for (name, pool) in pools {
            let e = services.proxying.upstreamOutcomes.errors[name]
            s.upstreams[name] = UpstreamStatus(
                idle: pool.idleCount, active: pool.inUse,
                recent5xx: e?.answers5xx.count(at: now) ?? 0, total5xx: e?.answers5xx.total ?? 0,
                recentFailures: e?.failures.count(at: now) ?? 0, totalFailures: e?.failures.total ?? 0)
        }
        s.routes = metrics.routeAnswers(now: now)
        s.tunnelsOpen = services.proxying.tunnels.entries.count
        s.clientConnections = servers.reduce(0) { $0 + $1.openConnections }
        s.inflight = metrics.inflight
        s.modules = services.modules.status
        return s
    }
}
