/// One worker's counters. Written only on that worker's loop; read by asking the loop for a
/// `MetricsSnapshot` (no locks or atomics on the request path).
final class WorkerMetrics {
    static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct RouteStatus: Hashable { var route: String; var status: Int }

    /// Counts keyed by routeID << 10 | status; names resolved only when scraped.
    private var counts: [Int: Int] = [:]
    /// Interned route names; index = route id. Append-only, so ids survive reloads.
    private var routeNames: [String] = []
    private var routeIDs: [String: Int] = [:]
    private(set) var latencyCounts = [Int](repeating: 0, count: latencyBuckets.count + 1)
    private(set) var latencySum = 0.0
    private(set) var upstreamErrors: [String: Int] = [:]
    var inflight = 0

    func routeID(_ name: String) -> Int {
        if let id = routeIDs[name] { return id }
        routeNames.append(name)
        routeIDs[name] = routeNames.count - 1
        return routeNames.count - 1
    }

    func record(routeID: Int, status: Int, seconds: Double) {
        counts[(routeID + 1) << 10 | min(status, 1023), default: 0] += 1
        var i = 0
        while i < WorkerMetrics.latencyBuckets.count && seconds > WorkerMetrics.latencyBuckets[i] { i += 1 }
        latencyCounts[i] += 1
        latencySum += seconds
    }

    func upstreamError(_ kind: String) { upstreamErrors[kind, default: 0] += 1 }

    private(set) var authFailures: [String: Int] = [:]
    func authFailure(_ code: String) { authFailures[code, default: 0] += 1 }

    /// Login callbacks answered, and the gateway's own time in them (the token endpoint's
    /// round trip excluded).
    private(set) var callbacks = 0
    private(set) var callbackOwnSeconds = 0.0
    func recordCallback(ownSeconds: Double) {
        callbacks += 1
        callbackOwnSeconds += max(0, ownSeconds)
    }

    func snapshot(upstreamConnections: [String: Int], clientConnections: Int, tokenCache: (hits: Int, misses: Int)) -> MetricsSnapshot {
        var requests: [RouteStatus: Int] = [:]
        for (key, n) in counts {
            let id = key >> 10 - 1
            requests[RouteStatus(route: id >= 0 ? routeNames[id] : "-", status: key & 1023), default: 0] += n
        }
        return MetricsSnapshot(requests: requests, latencyCounts: latencyCounts, latencySum: latencySum,
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
    var authFailures: [String: Int] = [:]
    var tokenCacheHits = 0
    var tokenCacheMisses = 0
    var callbacks = 0
    var callbackOwnSeconds = 0.0
    var dpopUnchecked = 0
    /// Times a listener stopped accepting because `limits.max_connections` was reached.
    var acceptPauses = 0
    /// Tunnels (WebSocket after a 101): open now, bytes each way, closes by reason.
    var tunnels = TunnelMetrics()

    mutating func add(_ o: MetricsSnapshot) {
        dpopUnchecked += o.dpopUnchecked
        acceptPauses += o.acceptPauses
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
        var out = "# HELP tokengate_requests_total Requests answered, by route and status.\n# TYPE tokengate_requests_total counter\n"
        for (k, v) in requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out += "tokengate_requests_total{route=\"\(label(k.route))\",status=\"\(k.status)\"} \(v)\n"
        }
        out += "# HELP tokengate_request_duration_seconds Time from request to last response byte.\n# TYPE tokengate_request_duration_seconds histogram\n"
        var cumulative = 0
        for (i, bound) in WorkerMetrics.latencyBuckets.enumerated() {
            cumulative += latencyCounts[i]
            out += "tokengate_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        cumulative += latencyCounts.last!
        out += "tokengate_request_duration_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        out += "tokengate_request_duration_seconds_sum \(latencySum)\ntokengate_request_duration_seconds_count \(cumulative)\n"
        out += "# HELP tokengate_upstream_errors_total Upstream exchanges that failed, by kind.\n# TYPE tokengate_upstream_errors_total counter\n"
        for (k, v) in upstreamErrors.sorted(by: { $0.key < $1.key }) {
            out += "tokengate_upstream_errors_total{kind=\"\(label(k))\"} \(v)\n"
        }
        out += "# HELP tokengate_inflight_requests Requests being served now.\n# TYPE tokengate_inflight_requests gauge\ntokengate_inflight_requests \(inflight)\n"
        out += "# HELP tokengate_client_connections Open client connections.\n# TYPE tokengate_client_connections gauge\ntokengate_client_connections \(clientConnections)\n"
        out += "# HELP tokengate_accept_pauses_total Times accepting paused at limits.max_connections.\n# TYPE tokengate_accept_pauses_total counter\ntokengate_accept_pauses_total \(acceptPauses)\n"
        out += "# HELP tokengate_upstream_connections Open connections to each upstream.\n# TYPE tokengate_upstream_connections gauge\n"
        for (k, v) in upstreamConnections.sorted(by: { $0.key < $1.key }) {
            out += "tokengate_upstream_connections{upstream=\"\(label(k))\"} \(v)\n"
        }
        out += "# HELP tokengate_auth_failures_total Requests refused by authentication, by RFC 6750 code.\n# TYPE tokengate_auth_failures_total counter\n"
        for (k, v) in authFailures.sorted(by: { $0.key < $1.key }) {
            out += "tokengate_auth_failures_total{error=\"\(label(k))\"} \(v)\n"
        }
        out += "# HELP tokengate_token_cache_total Validated-token cache lookups.\n# TYPE tokengate_token_cache_total counter\n"
        out += "tokengate_token_cache_total{result=\"hit\"} \(tokenCacheHits)\ntokengate_token_cache_total{result=\"miss\"} \(tokenCacheMisses)\n"
        out += "# HELP tokengate_dpop_unchecked_proofs_total DPoP proofs accepted without a replay check while the store was down (dpop.on_store_failure: fail_open).\n# TYPE tokengate_dpop_unchecked_proofs_total counter\ntokengate_dpop_unchecked_proofs_total \(dpopUnchecked)\n"
        out += "# HELP tokengate_login_callback_own_seconds The gateway's own time answering login callbacks (token endpoint excluded).\n# TYPE tokengate_login_callback_own_seconds summary\n"
        out += "tokengate_login_callback_own_seconds_sum \(callbackOwnSeconds)\ntokengate_login_callback_own_seconds_count \(callbacks)\n"
        out += tunnels.prometheusText()
        out += "# HELP tokengate_ready Whether the gateway reports ready.\n# TYPE tokengate_ready gauge\ntokengate_ready \(ready ? 1 : 0)\n"
        return out
    }

    private func label(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
