import Reactor

/// One worker's counters. Written only on that worker's loop; read by asking the loop for a
/// `MetricsSnapshot` (no locks or atomics on the request path).
final class WorkerMetrics {
    static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
    ]

    struct RouteStatus: Hashable {
        var route: String
        var status: Int
    }

    /// Counts keyed by routeID << 10 | status; names resolved only when scraped.
    /// Unchecked exclusivity (with `latencyCounts`): written on the worker's loop only, one
    /// access at a time; the dynamic check cost a runtime call per request.
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) private var counts: [Int: Int] = [:]
    /// Interned route names; index = route id. Append-only, so ids survive reloads.
    private var routeNames: [String] = []
    private var routeIDs: [String: Int] = [:]
    @exclusivity(unchecked) private(set) var latencyCounts = [Int](repeating: 0, count: latencyBuckets.count + 1)
    /// Answers by route and status class for the status page, since start and recent: five
    /// slots (one per class) for each route that has answered, in the order they first did.
    @exclusivity(unchecked) private var classes: [RecentCount] = []
    /// Where each route's five slots start in `classes`, plus one (0: it has not answered
    /// yet), by route id + 1 (route -1: no route matched). Dense slots for every route up to
    /// the highest id that answered cost 80 bytes a route per worker (1.6 MB at 10,000
    /// routes whose catch-all is the last); this costs 4.
    @exclusivity(unchecked) private var classBase: [Int32] = []
    private(set) var latencySum = 0.0
    private(set) var upstreamErrors: [String: Int] = [:]
    @exclusivity(unchecked) var inflight = 0

    func routeID(_ name: String) -> Int {
        if let id = routeIDs[name] { return id }
        routeNames.append(name)
        routeIDs[name] = routeNames.count - 1
        return routeNames.count - 1
    }

    /// `now`: the worker's monotonic clock, for the status page's recent counts.
    func record(routeID: Int, status: Int, seconds: Double, at now: Double) {
        counts[(routeID + 1) << 10 | min(status, 1023), default: 0] += 1
        if (100..<600).contains(status) { classes[classSlot(routeID) + status / 100 - 1].record(at: now) }
        var i = 0
        while i < WorkerMetrics.latencyBuckets.count && seconds > WorkerMetrics.latencyBuckets[i] { i += 1 }
        latencyCounts[i] += 1
        latencySum += seconds
    }

    /// The first of the route's five slots in `classes`, made on its first answer.
    private func classSlot(_ routeID: Int) -> Int {
        let r = routeID + 1
        if r < classBase.count, classBase[r] > 0 { return Int(classBase[r]) - 1 }
        if r >= classBase.count { classBase += repeatElement(0, count: r + 1 - classBase.count) }
        classes += repeatElement(RecentCount(), count: 5)
        classBase[r] = Int32(classes.count - 5 + 1)
        return classes.count - 5
    }

    func upstreamError(_ kind: String) { upstreamErrors[kind, default: 0] += 1 }

    /// Each named route's answers by status class as of `now`, for the status page (by name,
    /// as /metrics counts them; a route renamed by a reload starts again).
    func routeAnswers(now: Double) -> [String: RouteAnswers] {
        var out: [String: RouteAnswers] = [:]
        for (id, name) in routeNames.enumerated() {
            var a = RouteAnswers()
            if id + 1 < classBase.count, classBase[id + 1] > 0 {
                let first = Int(classBase[id + 1]) - 1
                for c in 0..<5 {
                    a.total[c] = classes[first + c].total
                    a.recent[c] = classes[first + c].count(at: now)
                }
            }
            out[name, default: RouteAnswers()] = out[name, default: RouteAnswers()].adding(a)
        }
        return out
    }

    private(set) var authFailures: [AuthFailure: Int] = [:]
    func authFailure(_ kind: AuthFailure) { authFailures[kind, default: 0] += 1 }

    /// Login callbacks answered, and the gateway's own time in them (the token endpoint's
    /// round trip excluded).
    private(set) var callbacks = 0
    private(set) var callbackOwnSeconds = 0.0
    func recordCallback(ownSeconds: Double) {
        callbacks += 1
        callbackOwnSeconds += max(0, ownSeconds)
    }

    func snapshot(upstreamConnections: [String: Int], clientConnections: Int, tokenCache: (hits: Int, misses: Int))
        -> MetricsSnapshot
    {
        var requests: [RouteStatus: Int] = [:]
        for (key, n) in counts {
            let id = key >> 10 - 1
            requests[RouteStatus(route: id >= 0 ? routeNames[id] : "-", status: key & 1023), default: 0] += n
        }
        return MetricsSnapshot(
            requests: requests, latencyCounts: latencyCounts, latencySum: latencySum,
            upstreamErrors: upstreamErrors, inflight: inflight, upstreamConnections: upstreamConnections,
            clientConnections: clientConnections, authFailures: authFailures,
            tokenCacheHits: tokenCache.hits, tokenCacheMisses: tokenCache.misses,
            callbacks: callbacks, callbackOwnSeconds: callbackOwnSeconds)
    }
}

/// Counters of all workers added up, rendered in the Prometheus text format (0.0.4).
struct MetricsSnapshot: Sendable {
    var requests: [WorkerMetrics.RouteStatus: Int] = [:]
    var latencyCounts = [Int](repeating: 0, count: WorkerMetrics.latencyBuckets.count + 1)
    var latencySum = 0.0
    var upstreamErrors: [String: Int] = [:]
    var inflight = 0
    var upstreamConnections: [String: Int] = [:]
    var clientConnections = 0
    var authFailures: [AuthFailure: Int] = [:]
    var tokenCacheHits = 0
    var tokenCacheMisses = 0
    var callbacks = 0
    var callbackOwnSeconds = 0.0
    var dpopUnchecked = 0
    /// Times a listener stopped accepting because `limits.max_connections` was reached.
    var acceptPauses = 0
    /// Idle client connections closed to make room at `limits.max_connections`.
    var connectionsReclaimed = 0
    /// HTTPS upstreams: TLS handshakes, and how many resumed a session.
    var upstreamTLSHandshakes: [String: UpstreamTLSHandshakes] = [:]
    /// Tunnels (WebSocket after a 101): open now, bytes each way, closes by reason.
    var tunnels = TunnelMetrics()
    /// The modules' counters (`GatewayModule`), in catalog order.
    var modules = ModuleMetricsSnapshot()

    mutating func add(_ o: MetricsSnapshot) {
        modules.add(o.modules)
        dpopUnchecked += o.dpopUnchecked
        acceptPauses += o.acceptPauses
        connectionsReclaimed += o.connectionsReclaimed
        upstreamTLSHandshakes.merge(o.upstreamTLSHandshakes) { $0.adding($1) }
        tunnels.add(o.tunnels)
        callbacks += o.callbacks
        callbackOwnSeconds += o.callbackOwnSeconds
        requests.merge(o.requests, uniquingKeysWith: +)
        for i in latencyCounts.indices { latencyCounts[i] += o.latencyCounts[i] }
        latencySum += o.latencySum
        upstreamErrors.merge(o.upstreamErrors, uniquingKeysWith: +)
        inflight += o.inflight
        upstreamConnections.merge(o.upstreamConnections, uniquingKeysWith: +)
        clientConnections += o.clientConnections
        authFailures.merge(o.authFailures, uniquingKeysWith: +)
        tokenCacheHits += o.tokenCacheHits
        tokenCacheMisses += o.tokenCacheMisses
    }

    func prometheusText(ready: Bool) -> String {
        var out = PrometheusText()
        out.family("tokengate_requests_total", .counter, help: "Requests answered, by route and status.")
        for (k, v) in requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out.sample("tokengate_requests_total", [("route", k.route), ("status", String(k.status))], v)
        }
        out.family("tokengate_request_duration_seconds", .histogram, help: "Time from request to last response byte.")
        var cumulative = 0
        for (i, bound) in WorkerMetrics.latencyBuckets.enumerated() {
            cumulative += latencyCounts[i]
            out.sample("tokengate_request_duration_seconds_bucket", [("le", "\(bound)")], cumulative)
        }
        cumulative += latencyCounts.last!
        out.sample("tokengate_request_duration_seconds_bucket", [("le", "+Inf")], cumulative)
        out.sample("tokengate_request_duration_seconds_sum", [], latencySum)
        out.sample("tokengate_request_duration_seconds_count", [], cumulative)
        out.labelled(
            "tokengate_upstream_errors_total", .counter, help: "Upstream exchanges that failed, by kind.",
            label: "kind", upstreamErrors.sorted(by: { $0.key < $1.key }))
        out.single("tokengate_inflight_requests", .gauge, help: "Requests being served now.", inflight)
        out.single("tokengate_client_connections", .gauge, help: "Open client connections.", clientConnections)
        out.single(
            "tokengate_accept_pauses_total", .counter, help: "Times accepting paused at limits.max_connections.",
            acceptPauses)
        out.single(
            "tokengate_connections_reclaimed_total", .counter,
            help: "Idle client connections closed to make room at limits.max_connections.", connectionsReclaimed)
        out.labelled(
            "tokengate_upstream_connections", .gauge, help: "Open connections to each upstream.",
            label: "upstream", upstreamConnections.sorted(by: { $0.key < $1.key }))
        out.family(
            "tokengate_upstream_tls_handshakes_total", .counter,
            help: "TLS handshakes with HTTPS upstreams, by whether they resumed a session.")
        for (k, v) in upstreamTLSHandshakes.sorted(by: { $0.key < $1.key }) {
            out.sample(
                "tokengate_upstream_tls_handshakes_total", [("upstream", k), ("resumed", "false")], v.all - v.resumed)
            out.sample("tokengate_upstream_tls_handshakes_total", [("upstream", k), ("resumed", "true")], v.resumed)
        }
        out.labelled(
            "tokengate_auth_failures_total", .counter, help: "Requests refused by authentication, by RFC 6750 code.",
            label: "error", authFailures.map { ($0.key.code, $0.value) }.sorted(by: { $0.0 < $1.0 }))
        out.labelled(
            "tokengate_token_cache_total", .counter, help: "Validated-token cache lookups.",
            label: "result", [("hit", tokenCacheHits), ("miss", tokenCacheMisses)])
        out.single(
            "tokengate_dpop_unchecked_proofs_total", .counter,
            help:
                "DPoP proofs accepted without a replay check while the store was down (dpop.on_store_failure: fail_open).",
            dpopUnchecked)
        out.family(
            "tokengate_login_callback_own_seconds", .summary,
            help: "The gateway's own time answering login callbacks (token endpoint excluded).")
        out.sample("tokengate_login_callback_own_seconds_sum", [], callbackOwnSeconds)
        out.sample("tokengate_login_callback_own_seconds_count", [], callbacks)
        tunnels.write(to: &out)
        modules.write(to: &out)
        out.single("tokengate_ready", .gauge, help: "Whether the gateway reports ready.", ready ? 1 : 0)
        return out.text
    }
}

/// One upstream's TLS handshakes: all of them, and those that resumed a session (RFC 8446
/// §2.2) instead of a full handshake with certificates.
struct UpstreamTLSHandshakes: Sendable, Equatable {
    var all = 0
    var resumed = 0

    mutating func add(_ pool: UpstreamPool) {
        all += pool.tlsHandshakes
        resumed += pool.tlsResumedHandshakes
    }

    func adding(_ o: UpstreamTLSHandshakes) -> UpstreamTLSHandshakes {
        .init(all: all + o.all, resumed: resumed + o.resumed)
    }
}
