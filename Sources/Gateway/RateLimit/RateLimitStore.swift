import Foundation
import Synchronization

/// Where the keys' states (each a GCRA theoretical arrival time) live: in the process, for
/// all its workers (`MemoryRateLimits`), or in Redis for every replica (`RedisRateLimits`).
/// `key` is already a keyed digest (`RateLimiter.storeKey`), never a raw identity.
protocol RateLimitStore: AnyObject {
    /// Takes one request from `key`'s budget under `cell`; `done` runs on the caller's loop,
    /// at once or later, with the decision or why the store could not answer.
    func take(_ key: String, _ cell: GCRA, done: @escaping (Result<GCRA.Decision, RateLimitStoreError>) -> Void)
    /// Whether the store answers within the call (`takeNow`), with no completion to make.
    var answersAtOnce: Bool { get }
    /// `take`, answered now; only called on a store that `answersAtOnce`.
    func takeNow(_ key: String, _ cell: GCRA) -> Result<GCRA.Decision, RateLimitStoreError>
}

extension RateLimitStore {
    var answersAtOnce: Bool { false }
    func takeNow(_ key: String, _ cell: GCRA) -> Result<GCRA.Decision, RateLimitStoreError> {
        preconditionFailure("takeNow on a store that answers later")
    }
}

struct RateLimitStoreError: Error, Sendable {
    var message: String
}

/// The memory store: one table for the whole process, so its workers share one exact
/// budget per key; a replica of its own has a budget of its own. Expired states (their TAT
/// passed: the budget is whole) are swept as the table grows; past `capacity` live keys the
/// store answers an error, and the policy's `on_store_failure` decides.
final class MemoryRateLimits: RateLimitStore, Sendable {
    private struct Table {
        var tats: [String: Int64] = [:]
        var sweepAt = 1024
    }

    private let table = Mutex(Table())
    private let capacity: Int
    private let clock: @Sendable () -> Int64

    init(capacity: Int = 1_000_000, clock: @escaping @Sendable () -> Int64 = MemoryRateLimits.monotonicMicroseconds) {
        self.capacity = capacity
        self.clock = clock
    }

    var answersAtOnce: Bool { true }

    func take(_ key: String, _ cell: GCRA, done: @escaping (Result<GCRA.Decision, RateLimitStoreError>) -> Void) {
        done(takeNow(key, cell))
    }

    func takeNow(_ key: String, _ cell: GCRA) -> Result<GCRA.Decision, RateLimitStoreError> {
        let now = clock()
        return table.withLock { t in
            // A key the table holds is found once and updated where it lies.
            if let i = t.tats.index(forKey: key) {
                let (decision, next) = cell.take(tat: t.tats.values[i], now: now)
                if let next { t.tats.values[i] = next }
                return .success(decision)
            }
            let (decision, next) = cell.take(tat: nil, now: now)
            guard let next else { return .success(decision) }
            if t.tats.count >= t.sweepAt {
                t.tats = t.tats.filter { $0.value > now }
                t.sweepAt = max(1024, t.tats.count * 2)
                if t.tats.count >= capacity {
                    return .failure(RateLimitStoreError(message: "the memory store holds \(capacity) live keys"))
                }
            }
            t.tats[key] = next
            return .success(decision)
        }
    }

    /// Keys whose state is still kept (for tests: expiry).
    var liveKeys: Int { table.withLock { t in t.tats.filter { $0.value > clock() }.count } }

    static func monotonicMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
