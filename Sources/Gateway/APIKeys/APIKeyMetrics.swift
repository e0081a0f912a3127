/// Keys presented, by set and outcome (`APIKeyTable.Outcome.label`): one worker's counts, or
/// all workers' added up, as `tokengate_api_key_auth_total{set,outcome}`.
struct APIKeyMetrics: ModuleMetrics {
    struct Key: Hashable, Sendable {
        let set: String
        let outcome: String
    }

    /// (set, outcome) → count: a pair, so counting builds no string.
    private(set) var checks: [Key: Int] = [:]

    mutating func record(set: String, outcome: String) { checks[Key(set: set, outcome: outcome), default: 0] += 1 }

    mutating func add(_ o: APIKeyMetrics) { checks.merge(o.checks, uniquingKeysWith: +) }

    func write(to out: inout PrometheusText) {
        out.family(
            "tokengate_api_key_auth_total", .counter,
            help: "API keys presented, by set and outcome (ok, unknown, malformed, expired, not_yet_valid).")
        let sorted = checks.sorted { ($0.key.set, $0.key.outcome) < ($1.key.set, $1.key.outcome) }
        for (key, n) in sorted {
            out.sample("tokengate_api_key_auth_total", [("set", key.set), ("outcome", key.outcome)], n)
        }
    }
}
