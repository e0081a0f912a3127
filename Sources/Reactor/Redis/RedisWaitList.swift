/// Commands a Sentinel or Cluster client holds while it finds out where to send them (the
/// master's address, the slot map). Each may wait `limit` seconds at most — the connect
/// timeout plus the command timeout, what a `RedisClient` allows a command sent while it
/// connects — then fails with `.unavailable`, so nothing waits forever on a discovery that
/// is slow to give up. Loop-thread only.
final class RedisWaitList<Command> {
    typealias Completion = RedisClient.Completion

    private struct Entry {
        let command: Command
        let done: Completion
        let deadline: ContinuousClock.Instant
    }

    private let loop: EventLoop
    private let limit: Double
    /// What the commands wait for, for the expiry message ("a master for mymaster").
    private let awaiting: String
    private var entries = RedisQueue<Entry>()
    private var timer: LoopTimer?

    init(loop: EventLoop, limit: Double, awaiting: String) {
        self.loop = loop
        self.limit = limit
        self.awaiting = awaiting
    }

    var count: Int { entries.count }

    func append(_ command: Command, done: @escaping Completion) {
        entries.append(Entry(command: command, done: done, deadline: .now + .seconds(limit)))
        armTimer()
    }

    /// Every waiting command, oldest first, for the caller to send on; the list is empty after.
    func removeAll() -> [(command: Command, done: Completion)] {
        timer = nil
        return entries.removeAll().map { ($0.command, $0.done) }
    }

    /// Fails every waiting command with `error`, after the list is emptied (a completion may
    /// send again).
    func failAll(_ error: RedisError) {
        for entry in removeAll() { entry.done(.failure(error)) }
    }

    /// One timer for the oldest deadline: later commands have later deadlines.
    private func armTimer() {
        guard timer == nil, let first = entries.first else { return }
        let wait = max(0, RedisClient.seconds(ContinuousClock.now.duration(to: first.deadline)))
        timer = LoopTimer(loop: loop, seconds: wait) { [weak self] in self?.expire() }
    }

    private func expire() {
        timer = nil
        let now = ContinuousClock.now
        var expired: [Completion] = []
        while let first = entries.first, first.deadline <= now {
            _ = entries.popFirst()
            expired.append(first.done)
        }
        armTimer()
        let error = RedisError(.unavailable, "no \(awaiting) within \(limit) s")
        for done in expired { done(.failure(error)) }
    }
}
