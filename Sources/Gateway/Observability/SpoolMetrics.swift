import Reactor

/// The proxy buffering's metrics: messages spooled to disk (answers for slow clients, request
/// bodies read before the upstream hears of them), the disk they hold now, and spools that
/// failed (no file, a write or read error, the process's cap).
enum SpoolMetrics {
    static func text(_ budget: SpoolBudget?) -> String {
        guard let budget else { return "" }
        var out = PrometheusText()
        out.single(
            "tokengate_spools_total", .counter,
            help: "Upstream answers and request bodies that went partly to a temp file.", budget.spools)
        out.single(
            "tokengate_spool_bytes", .gauge, help: "Disk held by spools now.", budget.inUse)
        out.single(
            "tokengate_spool_failures_total", .counter,
            help: "Spools that could not be made, written or read, or found the disk cap reached.",
            budget.failures)
        return out.text
    }
}
