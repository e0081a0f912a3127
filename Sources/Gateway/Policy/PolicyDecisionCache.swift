import Foundation
import Reactor

/// The PDP's decisions, kept for the whole process and shared by its workers, by the digest
/// of what was asked (`AuthZENEvaluation.key`): an allow for `allow_ttl`, a deny for
/// `deny_ttl`; an error never. Identical questions asked while one is out wait for its
/// answer, on any worker, so a burst of one caller's requests is one PDP call.
///
/// `@unchecked Sendable`: workers on other threads call it; its state changes only under
/// `lock`, and each waiter is called back on its own loop (`EventLoop.execute`).
final class PolicyDecisionCache: @unchecked Sendable {
    typealias Done = (Result<AuthZENDecision, AuthZENError>) -> Void

    enum Role {
        /// Kept: the decision, until when it stands.
        case hit(AuthZENDecision, until: Double)
        /// Nobody is asking: this caller asks the PDP, then calls `finish`.
        case leader
        /// Another caller is asking: `done` runs on the caller's loop with its answer.
        case waiting
    }

    private let lock = NSLock()
    private var entries: [DecisionKey: (decision: AuthZENDecision, until: Double)] = [:]
    private var inFlight: [DecisionKey: [(EventLoop, Done)]] = [:]
    /// Calls made to PDPs (not answered here), for metrics and tests.
    private(set) var calls = 0

    func join(_ key: DecisionKey, loop: EventLoop, now: Double, done: @escaping Done) -> Role {
        lock.withLock {
            if let e = entries[key] {
                if e.until > now { return .hit(e.decision, until: e.until) }
                entries[key] = nil
            }
            if inFlight[key] != nil {
                inFlight[key]!.append((loop, done))
                return .waiting
            }
            inFlight[key] = []
            calls += 1
            return .leader
        }
    }

    /// The leader's answer: kept by its TTL (not an error), and handed to every waiter on
    /// its own loop.
    func finish(
        _ key: DecisionKey, _ result: Result<AuthZENDecision, AuthZENError>, cache: AuthorizerCache, now: Double
    ) {
        let waiters: [(EventLoop, Done)] = lock.withLock {
            if case .success(let d) = result, cache.maxEntries > 0 {
                let ttl = d.allowed ? cache.allowTTL : cache.denyTTL
                if ttl > 0 {
                    if entries.count >= cache.maxEntries {
                        entries = entries.filter { $0.value.until > now }
                        if entries.count >= cache.maxEntries { entries.removeAll() }
                    }
                    entries[key] = (d, now + ttl)
                }
            }
            return inFlight.removeValue(forKey: key) ?? []
        }
        for (loop, done) in waiters { loop.execute { done(result) } }
    }

    /// A new config: decisions made under the old one are not used.
    func clear() { lock.withLock { entries.removeAll() } }

    var count: Int { lock.withLock { entries.count } }
}
