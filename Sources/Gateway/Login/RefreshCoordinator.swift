import Foundation
import Reactor

/// One refresh per session at a time, across every worker of the process: the first request
/// that finds the access token due refreshes; concurrent requests for the same session (on
/// any worker) wait for its outcome instead of racing it with the same refresh token — with
/// rotating refresh tokens the second use would fail and end the session. The outcome is
/// kept for a short grace time, so a request that still carries the old cookie gets the new
/// session rather than a second refresh.
///
/// `@unchecked Sendable`: workers on other threads call it; its state (`inFlight`, `recent`,
/// `refreshesStarted`) changes only under `lock`, and each waiter is called back on its own
/// loop (`EventLoop.execute`), never on the caller's thread.
final class RefreshCoordinator: @unchecked Sendable {
    enum Outcome {
        case refreshed(Session)
        /// Another replica refreshed it: the store already holds this session (nothing to save).
        case current(Session)
        /// Refreshed, but the store did not keep it: used by the requests waiting now, not
        /// saved again, not remembered.
        case unsaved(Session)
        /// The AS could not be asked (down, 5xx, metadata not loaded): the session goes on as
        /// it is, and a later request tries again.
        case unchanged
        /// The AS refused the refresh token: the session is over (the next request logs in).
        case ended
    }

    private let lock = NSLock()
    private var inFlight: [String: [(EventLoop, (Outcome) -> Void)]] = [:]
    private var recent: [String: (outcome: Outcome, until: Double)] = [:]
    let grace: Double
    private(set) var refreshesStarted = 0

    init(grace: Double = 30) { self.grace = grace }

    enum Role {
        /// This caller refreshes, then calls `finish`.
        case leader
        /// Another caller is refreshing: `done` runs on `loop` with its outcome.
        case waiting
        /// A refresh just finished: here is its outcome.
        case finished(Outcome)
    }

    func join(_ sessionID: String, loop: EventLoop, done: @escaping (Outcome) -> Void) -> Role {
        let now = ProcessInfo.processInfo.systemUptime
        return lock.withLock {
            if let r = recent[sessionID], r.until > now { return .finished(r.outcome) }
            if inFlight[sessionID] != nil {
                inFlight[sessionID]!.append((loop, done))
                return .waiting
            }
            inFlight[sessionID] = []
            refreshesStarted += 1
            return .leader
        }
    }

    /// A refresh that failed after this long (the AS hung or crawled, up to the token
    /// endpoint's bound) is remembered for `slowFailureBackoff`: the session's next requests
    /// then go on at once (a route forwarding the expired token gets 503 with a retry)
    /// instead of each leading a refresh that waits the whole bound again.
    static let slowFailure = 2.0
    static let slowFailureBackoff = 5.0

    /// The leader's outcome: every waiter gets it on its own loop. `took`: how long the
    /// leader waited for it.
    func finish(_ sessionID: String, _ outcome: Outcome, took: Double = 0) {
        let now = ProcessInfo.processInfo.systemUptime
        let waiters: [(EventLoop, (Outcome) -> Void)] = lock.withLock {
            if recent.count > 10_000 { recent = recent.filter { $0.value.until > now } }
            // A temporary outcome (the AS or the store did not answer) is not remembered: the
            // next request tries again, unless it took long (a hung AS), then only after a
            // short backoff.
            switch outcome {
            case .unchanged where took >= Self.slowFailure:
                recent[sessionID] = (outcome, now + Self.slowFailureBackoff)
            case .unchanged, .unsaved: break
            default: recent[sessionID] = (outcome, now + grace)
            }
            return inFlight.removeValue(forKey: sessionID) ?? []
        }
        for (loop, done) in waiters { loop.execute { done(outcome) } }
    }
}
