/// MCP calls judged on one worker (and, added up, in the process), by route, method and what
/// became of them: `tokengate_mcp_calls_total{route,method,outcome}`. The method label is one
/// the MCP revisions define, else `other`: a client's made-up methods mint no series.
struct MCPCallMetrics: Sendable {
    enum Outcome: String, Sendable, CaseIterable {
        /// Judged and sent on (to the server, or allowed in decision mode).
        case allowed
        /// Refused by the route's rules: a scope, a role, `default: deny`.
        case denied
        /// A mirrored header missing or unlike the body (SEP-2243, `-32020`).
        case headerMismatch = "header_mismatch"
        /// A revision the route does not take (`-32022`).
        case unsupportedVersion = "unsupported_version"
        /// No JSON-RPC message the gateway could judge (`-32700`, `-32600`, `-32602`).
        case invalid
    }

    struct Key: Hashable, Sendable {
        var route: String
        var method: String
        var outcome: Outcome
    }

    private(set) var counts: [Key: Int] = [:]

    /// The client methods of the revisions tokengate judges (2025-06-18 to 2026-07-28).
    static let knownMethods: Set<String> = [
        "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
        "resources/templates/list", "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get",
        "completion/complete", "logging/setLevel", "server/discover", "subscriptions/listen",
        "notifications/initialized", "notifications/cancelled", "notifications/progress",
        "notifications/roots/list_changed", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel"
    ]

    /// The series counted last and where it sits: a worker's calls mostly repeat one, and
    /// finding it again by its key hashes two strings (and the method once more for the set).
    private var last: (key: Key, index: [Key: Int].Index)?

    /// `method`: the message's, or nil for one that could not be read (label `-`).
    mutating func record(route: String, method: String?, _ outcome: Outcome) {
        // A method equal to the last label is that label: a known method, or "other" itself.
        if let last, let method, method == last.key.method, last.key.outcome == outcome, last.key.route == route {
            counts.values[last.index] += 1
            return
        }
        let label = method.map { Self.knownMethods.contains($0) ? $0 : "other" } ?? "-"
        let key = Key(route: route, method: label, outcome: outcome)
        counts[key, default: 0] += 1
        last = label == "-" ? nil : (key, counts.index(forKey: key)!)
    }

    mutating func add(_ o: MCPCallMetrics) {
        counts.merge(o.counts, uniquingKeysWith: +)
        last = nil
    }

    func write(to out: inout PrometheusText) {
        out.family(
            "tokengate_mcp_calls_total", .counter,
            help: "MCP messages judged, by route, method and outcome (allowed, denied, header_mismatch, …).")
        let sorted = counts.sorted {
            ($0.key.route, $0.key.method, $0.key.outcome.rawValue) < (
                $1.key.route, $1.key.method, $1.key.outcome.rawValue
            )
        }
        for (key, n) in sorted {
            out.sample(
                "tokengate_mcp_calls_total",
                [("route", key.route), ("method", key.method), ("outcome", key.outcome.rawValue)], n)
        }
    }
}
