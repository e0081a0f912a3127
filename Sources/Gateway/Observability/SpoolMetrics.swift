import Reactor

/// The proxy buffering's metrics: answers spooled to disk for slow clients, the disk they
/// hold now, and spools that failed (no file, a write or read error).
enum SpoolMetrics {
    static func text(_ budget: SpoolBudget?) -> String {
        guard let budget else { return "" }
        var out = PrometheusText()
        out.single(
            "tokengate_response_spools_total", .counter,
            help: "Upstream answers that went partly to a temp file because the client read slowly.", budget.spools)
        out.single(
            "tokengate_response_spool_bytes", .gauge, help: "Disk held by spooled answers now.", budget.inUse)
        out.single(
            "tokengate_response_spool_failures_total", .counter,
            help: "Spools that could not be made, written or read (the answer was paused or cut instead).",
            budget.failures)
        return out.text
    }
}
