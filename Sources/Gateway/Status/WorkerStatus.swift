import Reactor

/// What one worker tells the status page (asked on its own loop, like the metrics snapshot),
/// and, added up on the main loop, what all of them do.
struct WorkerStatus: Sendable {
    /// The config generation each worker runs: they differ for a moment after a reload.
    var generations: [Int] = []
    var upstreams: [String: UpstreamStatus] = [:]
    /// Answers by route name and status class.
    var routes: [String: RouteAnswers] = [:]
    var tunnelsOpen = 0
    var clientConnections = 0
    var inflight = 0
    /// The modules' parts (`GatewayModule`).
    var modules = ModuleStatusSnapshot()

    mutating func add(_ o: WorkerStatus) {
        modules.add(o.modules)
        generations += o.generations
        upstreams.merge(o.upstreams) { $0.adding($1) }
        routes.merge(o.routes) { $0.adding($1) }
        tunnelsOpen += o.tunnelsOpen
        clientConnections += o.clientConnections
        inflight += o.inflight
    }
}

/// One route's answers by status class, 1xx to 5xx (per worker, or added up): since the
/// process started, and in the last `RecentCount.minutes` minutes.
struct RouteAnswers: Sendable, Equatable {
    /// Index 0 is 1xx, 4 is 5xx.
    var total = [Int](repeating: 0, count: 5)
    var recent = [Int](repeating: 0, count: 5)

    func adding(_ o: RouteAnswers) -> RouteAnswers {
        RouteAnswers(total: zip(total, o.total).map(+), recent: zip(recent, o.recent).map(+))
    }
}

/// One upstream's pool (per worker, or added up): its connections and its recent 5xx.
struct UpstreamStatus: Sendable, Equatable {
    /// Keep-alive connections waiting for a request.
    var idle = 0
    /// Connections a request holds now.
    var active = 0
    /// 5xx answers the upstream sent, in the last `RecentCount.minutes` minutes and ever.
    var recent5xx = 0
    var total5xx = 0
    /// Exchanges that got no answer (connect error, timeout, cut response): the gateway's
    /// own 502/504.
    var recentFailures = 0
    var totalFailures = 0

    func adding(_ o: UpstreamStatus) -> UpstreamStatus {
        UpstreamStatus(
            idle: idle + o.idle, active: active + o.active, recent5xx: recent5xx + o.recent5xx,
            total5xx: total5xx + o.total5xx, recentFailures: recentFailures + o.recentFailures,
            totalFailures: totalFailures + o.totalFailures)
    }
}

/// A worker's upstream answers as the status page counts them. Loop-thread only; touched on
/// the request path only when an upstream answers 5xx or fails, by a table lookup.
final class UpstreamOutcomes {
    /// Pool → upstream name, rebuilt when a config is applied (a pool does not know its name).
    private var names: [ObjectIdentifier: String] = [:]
    private(set) var errors: [String: (answers5xx: RecentCount, failures: RecentCount)] = [:]

    func setPools(_ pools: [String: UpstreamPool]) {
        names = Dictionary(uniqueKeysWithValues: pools.map { (ObjectIdentifier($0.value), $0.key) })
    }

    /// An upstream answered `status` (only 5xx are kept); `now`: the worker's monotonic clock.
    func answered(_ status: Int, pool: UpstreamPool, now: Double) {
        guard status >= 500, let name = names[ObjectIdentifier(pool)] else { return }
        errors[name, default: (RecentCount(), RecentCount())].answers5xx.record(at: now)
    }

    func failed(pool: UpstreamPool, now: Double) {
        guard let name = names[ObjectIdentifier(pool)] else { return }
        errors[name, default: (RecentCount(), RecentCount())].failures.record(at: now)
    }
}
