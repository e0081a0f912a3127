import Foundation
import Reactor

/// Tokens the gateway gets for itself with the client credentials grant, held for the whole
/// process and shared by its workers: each worker's `ClientCredentialsToken` asks here when
/// its own copy is gone, and gets the held token, waits for the request another worker has
/// under way, or makes the request itself (`finish` then tells the others). So a token is
/// asked for once per process however many workers need it, and refreshed once, shortly
/// before it expires. Keyed by what makes a grant what it is (`ClientCredentialsToken.key`);
/// a failure is never held: the next caller asks again.
///
/// `@unchecked Sendable`: workers on other threads call it; its state changes only under
/// `lock`, and each waiter is called back on its own loop (`EventLoop.execute`).
final class ProcessGrantTokens: @unchecked Sendable {
    typealias Outcome = Result<String, ClientCredentialsError>
    /// An outcome, and until when (uptime seconds) a token in it may be used.
    typealias Done = (Outcome, _ until: Double) -> Void

    enum Role {
        /// Held: the token and until when.
        case held(String, until: Double)
        /// Nobody is asking: this caller asks, then calls `finish` with this lead.
        case leader(Lead)
        /// Another worker is asking: `done` runs on the caller's loop with its outcome.
        case waiting
    }

    /// The leader's claim on a request: a `finish` under an older config holds nothing.
    struct Lead {
        let key: String
        let generation: Int
    }

    private let lock = NSLock()
    private var held: [String: (token: String, until: Double)] = [:]
    private var inFlight: [String: [(EventLoop, Done)]] = [:]
    private var generation = 0
    /// Token requests led (not answered from here), for tests.
    private(set) var led = 0

    func join(_ key: String, loop: EventLoop, now: Double, done: @escaping Done) -> Role {
        lock.withLock {
            if let h = held[key] {
                if now < h.until { return .held(h.token, until: h.until) }
                held[key] = nil
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

    /// The leader's outcome: a token is held until `until` (from the config it was asked
    /// under), and every waiter gets the outcome on its own loop.
    func finish(_ lead: Lead, _ outcome: Outcome, until: Double) {
        let waiters: [(EventLoop, Done)] = lock.withLock {
            if case .success(let token) = outcome, lead.generation == generation {
                held[lead.key] = (token, until)
            }
            return inFlight.removeValue(forKey: lead.key) ?? []
        }
        for (loop, done) in waiters { loop.execute { done(outcome, until) } }
    }

    /// Whether `token` is still the one held under `key`: a worker's copy is used only while
    /// it is, so a token one worker saw refused (`drop`) or a reload cleared goes from none.
    func holds(_ key: String, token: String) -> Bool {
        lock.withLock { held[key]?.token == token }
    }

    /// The token was refused where it was sent: no worker hands it out again.
    func drop(_ key: String, token: String) {
        lock.withLock {
            if held[key]?.token == token { held[key] = nil }
        }
    }

    /// A new config: what was asked for under the old one is not used under the new one (a
    /// client's secret or scope may have changed under the same names).
    func clear() {
        lock.withLock {
            held.removeAll()
            generation += 1
        }
    }
}
