import Reactor

extension Worker {
    /// This worker's part of the status page (on its loop).
    func statusSnapshot() -> WorkerStatus {
        let now = clock()
        var s = WorkerStatus()
        s.generations = [configGeneration]
        for (name, pool) in pools {
            let e = upstreamOutcomes.errors[name]
            s.upstreams[name] = UpstreamStatus(
                idle: pool.idleCount, active: pool.inUse,
                recent5xx: e?.answers5xx.count(at: now) ?? 0, total5xx: e?.answers5xx.total ?? 0,
                recentFailures: e?.failures.count(at: now) ?? 0, totalFailures: e?.failures.total ?? 0)
        }
        s.tunnelsOpen = tunnels.entries.count
        s.clientConnections = servers.reduce(0) { $0 + $1.openConnections }
        s.inflight = metrics.inflight
        return s
    }
}
