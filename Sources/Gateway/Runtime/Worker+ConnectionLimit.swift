import Foundation

/// `limits.max_connections` as the worker sees it: its servers reclaim idle connections at
/// the process's cap (Reactor's `HTTP1Server`, `ConnectionBudget`); the worker says so in
/// the log, once a minute for the process, as nginx warns "worker_connections are not
/// enough, reusing connections".
extension Worker {
    /// An idle client connection was closed for a new one at `limits.max_connections`.
    func connectionReclaimed(_ warning: ReclaimWarning) {
        guard warning.due(now: Int(clock())) else { return }
        log.warning(
            "limits.max_connections reached: closing the oldest idle client connections for new ones (logged once a minute; tokengate_connections_reclaimed_total counts them)",
            metadata: ["max_connections": .stringConvertible(config.limits.maxConnections)])
    }
}
