/// Keys presented, by set and outcome (`APIKeyTable.Outcome.label`): one worker's counts, or
/// all workers' added up, as `tokengate_api_key_auth_total{set,outcome}`.
struct APIKeyMetrics: Sendable {
    /// `set\0outcome` → count.
    private(set) var checks: [String: Int] = [:]

    mutating func record(set: String, outcome: String) { checks[set + "\u{0}" + outcome, default: 0] += 1 }

    mutating func add(_ o: APIKeyMetrics) { checks.merge(o.checks, uniquingKeysWith: +) }

    func write(to out: inout PrometheusText) {
        out.family(
            "tokengate_api_key_auth_total", .counter,
            help: "API keys presented, by set and outcome (ok, unknown, malformed, expired, not_yet_valid).")
        for (key, n) in checks.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            out.sample("tokengate_api_key_auth_total", [("set", parts[0]), ("outcome", parts.last ?? "")], n)
        }
    }
}
