import Reactor

/// The proxy buffering's metrics: messages spooled to disk (answers for slow clients, request
/// bodies read before the upstream hears of them), the disk they hold now, and spools that
/// failed (no file, a write or read error, the process's cap).
enum SpoolMetrics {
    /// The answers' and the request bodies' budgets, counted together.
    static func text(_ budgets: [SpoolBudget]) -> String {
        guard !budgets.isEmpty else { return "" }
        var out = PrometheusText()
        out.single(
            "tokengate_spools_total", .counter,
            help: "Upstream answers and request bodies that went partly to a temp file.",
            budgets.reduce(0) { $0 + $1.spools })
        out.single(
            "tokengate_spool_bytes", .gauge, help: "Disk held by spools now.", budgets.reduce(0) { $0 + $1.inUse })
        out.single(
            "tokengate_spool_failures_total", .counter,
            help: "Spools that could not be made, written or read, or found the disk cap reached.",
            budgets.reduce(0) { $0 + $1.failures })
        return out.text
    }
}
