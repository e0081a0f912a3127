import Foundation
import Reactor

/// RFC 8693 exchanges kept for the whole process and shared by its workers: a token issued
/// for one caller's token and one target is asked for once, whichever worker the caller's
/// requests land on, so the upstream sees one token for one caller and the AS one call. A
/// worker that misses its own cache (`TokenExchanger`) asks here: a kept outcome (an issued
/// token until its expiry less the route's margin, a refusal for the route's negative TTL),
/// or the exchange under way, whose outcome it waits for on its own loop, or none — then it
/// leads the exchange and says how it came out (`finish`). Keyed by a digest of everything
/// that makes an exchange what it is (`TokenExchanger.processKey`): no token is a key here.
///
/// `@unchecked Sendable`: workers on other threads call it; its state changes only under
/// `lock`, and each waiter is called back on its own loop (`EventLoop.execute`), never on the
/// caller's thread.
final class ExchangedTokens: @unchecked Sendable {
    typealias Outcome = TokenExchanger.Outcome
    /// An outcome and until when it counts (seconds since 1970).
    typealias Done = (Outcome, _ until: Int64?) -> Void

    enum Role {
        /// Kept: the outcome, until when it counts.
        case kept(Outcome, until: Int64)
        /// Nobody is asking: this caller asks the AS, then calls `finish` with this token.
        case leader(Lead)
        /// Another worker is asking: `done` runs on the caller's loop with its outcome.
        case waiting
    }

    /// The leader's claim on an exchange: a `finish` under an older config keeps nothing.
    struct Lead {
        let key: String
        let generation: Int
    }

    private let lock = NSLock()
    private var kept: [String: (outcome: Outcome, until: Int64)] = [:]
    private var inFlight: [String: [(EventLoop, Done)]] = [:]
    private var generation = 0
    private let capacity: Int
    /// Exchanges led (not answered from here), for tests.
    private(set) var led = 0

    init(capacity: Int = 10_000) { self.capacity = capacity }

    func join(_ key: String, loop: EventLoop, now: Int64, done: @escaping Done) -> Role {
        lock.withLock {
            if let k = kept[key] {
                if k.until > now { return .kept(k.outcome, until: k.until) }
                kept[key] = nil
            }
            if inFlight[key] != nil {
                inFlight[key]!.append((loop, done))
                return .waiting
            }
            inFlight[key] = []
            led += 1
            return .leader(Lead(key: key, generation: generation))
        }
    }

    /// The leader's outcome: kept until `until` when it is worth keeping (an issued token or
    /// a refusal, from the config it was asked under), and handed to every waiter on its own loop.
    func finish(_ lead: Lead, _ outcome: Outcome, until: Int64?, now: Int64) {
        let waiters: [(EventLoop, Done)] = lock.withLock {
            if let until, until > now, lead.generation == generation, outcome.isKept {
                if kept.count >= capacity {
                    kept = kept.filter { $0.value.until > now }
                    if kept.count >= capacity { kept.removeAll() }
                }
                kept[lead.key] = (outcome, until)
            }
            return inFlight.removeValue(forKey: lead.key) ?? []
        }
        for (loop, done) in waiters { loop.execute { done(outcome, until) } }
    }

    /// A new config: what was exchanged under the old one is not used under the new one.
    /// Exchanges under way still answer their waiters, and keep nothing.
    func clear() {
        lock.withLock {
            kept.removeAll()
            generation += 1
        }
    }

    var count: Int { lock.withLock { kept.count } }
}

extension TokenExchanger.Outcome {
    /// An answer of the AS about the token (issued, refused), not a failure to get one.
    var isKept: Bool {
        switch self {
        case .issued, .refused: true
        case .unavailable: false
        }
    }
}
