/// A request waiting for a connection to an upstream whose pool is at its cap
/// (`UpstreamEndpoint.maxConnections`). Loop-thread only.
public protocol UpstreamWaiter: AnyObject {
    /// Its turn: it starts its call now, inside this callback, or lets the turn go to the
    /// next waiter.
    func upstreamRoom()
    /// No turn came within `UpstreamEndpoint.pendingTimeout`: it is out of the queue.
    func upstreamWaitExpired()
}

/// The pool's bounded FIFO of waiters (Envoy's `max_pending_requests`): at most `limit`
/// waiting, each for at most `timeout` seconds, so a cap never turns into an unbounded
/// backlog. One timer for the whole queue, set for its oldest entry (they all wait the
/// same time, so the oldest expires first). Turns are handed out on the loop's next turn
/// after a connection frees, never inside the call that freed it. Loop-thread only.
final class UpstreamPendingQueue {
    private struct Entry {
        let waiter: UpstreamWaiter
        let expires: Double
    }

    private let loop: EventLoop
    private let limit: Int
    private let timeout: Double
    /// Entries before `head` are gone (popped or removed); compacted as the queue empties.
    /// Unchecked exclusivity: loop-thread only, never mutated across a call out (a waiter is
    /// told its turn after it is popped); every proxied request reads them (`hasRoom`).
    @exclusivity(unchecked) private var entries: [Entry] = []
    @exclusivity(unchecked) private var head = 0
    private var timer: LoopTimer?
    @exclusivity(unchecked) private var turnScheduled = false

    init(loop: EventLoop, limit: Int, timeout: Double) {
        self.loop = loop
        self.limit = limit
        self.timeout = timeout
    }

    var isEmpty: Bool { head == entries.count }
    var count: Int { entries.count - head }

    func add(_ waiter: UpstreamWaiter) -> Bool {
        guard count < limit else { return false }
        entries.append(Entry(waiter: waiter, expires: LazyDeadline.now() + timeout))
        if timer == nil { armTimer() }
        return true
    }

    func remove(_ waiter: UpstreamWaiter) {
        guard let i = entries[head...].firstIndex(where: { $0.waiter === waiter }) else { return }
        entries.remove(at: i)
        settle()
    }

    /// A connection freed (or a waiter left): the next waiters get their turn soon.
    func roomMade(_ pool: UpstreamPool) {
        guard !isEmpty, !turnScheduled else { return }
        turnScheduled = true
        loop.execute { [weak self, weak pool] in
            guard let self, let pool else { return }
            self.turnScheduled = false
            self.giveTurns(pool)
        }
    }

    private func giveTurns(_ pool: UpstreamPool) {
        while !isEmpty && pool.roomForWaiter {
            let entry = popFirst()
            entry.waiter.upstreamRoom()
        }
        settle()
    }

    private func popFirst() -> Entry {
        let entry = entries[head]
        head += 1
        return entry
    }

    /// Compacts an empty queue and keeps the timer on its oldest entry.
    private func settle() {
        if isEmpty {
            entries.removeAll(keepingCapacity: true)
            head = 0
            timer?.cancel()
            timer = nil
        } else if head > 64 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    private func armTimer() {
        guard !isEmpty else { return }
        let wait = max(0, entries[head].expires - LazyDeadline.now())
        timer = LoopTimer(loop: loop, seconds: wait) { [weak self] in self?.expire() }
    }

    private func expire() {
        timer = nil
        let now = LazyDeadline.now()
        // The coarse clock may read a tick behind the timer that woke us.
        while !isEmpty && entries[head].expires <= now + 0.005 {
            popFirst().waiter.upstreamWaitExpired()
        }
        settle()
        if !isEmpty && timer == nil { armTimer() }
    }
}
