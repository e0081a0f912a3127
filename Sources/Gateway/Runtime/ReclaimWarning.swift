import Synchronization

/// When the warning about reclaimed connections is due: the first reclaim of each minute,
/// for the whole process, whichever worker made it (nginx warns "worker_connections are not
/// enough, reusing connections" at most once a second per worker; a minute keeps a flood of
/// idle sockets from flooding the log too). One atomic deadline, so workers never wait on
/// each other; the metric `tokengate_connections_reclaimed_total` counts every reclaim.
final class ReclaimWarning: Sendable {
    /// Monotonic seconds before which no warning is due.
    private let notBefore = Atomic<Int>(Int.min)
    static let intervalSeconds = 60

    init() {}

    /// Whether this reclaim, at monotonic time `now` (seconds), is the one to log.
    func due(now: Int) -> Bool {
        var next = notBefore.load(ordering: .relaxed)
        while now >= next {
            let (claimed, seen) = notBefore.compareExchange(
                expected: next, desired: now + Self.intervalSeconds, ordering: .relaxed)
            if claimed { return true }
            next = seen
        }
        return false
    }
}
