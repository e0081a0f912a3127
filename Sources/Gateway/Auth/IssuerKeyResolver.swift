import JOSE

/// The issuers' signing keys as this worker holds them, and the one way verifiers use them:
/// verify; on a key the set does not have (an AS that has just rotated one in), ask the main
/// loop for one rate-limited refetch and verify once more — never a second refetch, whatever
/// the token says (panva/jose's remote key set behaves the same). Access tokens, ID tokens at
/// the callback and back-channel logout tokens all go through `verify`.
///
/// A request waits for that refetch at most its issuer's `unknown_kid_wait`: a key server
/// that accepts the connection and never answers must not hold a request (and its slot) for
/// the fetch's whole timeout, or an attacker with random `kid`s could hold many. Past the
/// bound the request gets its verdict on the keys at hand (401 `invalid_token`) while the
/// fetch goes on; every request of this worker waiting on one issuer shares one refetch.
final class IssuerKeyResolver {
    /// Starts a one-shot timer on this worker's loop; the returned closure cancels it.
    typealias StartTimer = (_ seconds: Double, _ fire: @escaping () -> Void) -> () -> Void

    /// The default `unknown_kid_wait`.
    static let defaultRefetchWait = 1.0

    /// Issuer name → its keys, copied from the main loop's `IssuerKeyService`.
    private(set) var keys: [String: JWKSet] = [:]
    /// Asks the main loop to refetch an issuer's keys; the completion runs on this worker's
    /// loop with the new set (nil: nothing changed, or the refetch was rate-limited).
    var requestRefetch: ((_ issuer: String, _ done: @escaping (JWKSet?) -> Void) -> Void)?
    /// Runs after each new key set (what older keys verified must be verified again).
    var onUpdate: ((_ issuer: String) -> Void)?
    /// Issuer name → how long a request waits for a refetch (`unknown_kid_wait`); absent:
    /// `defaultRefetchWait`.
    var refetchWait: [String: Double] = [:]

    /// A request waiting for its issuer's refetch: how to finish it, and its timer.
    private struct Waiter {
        let resume: () -> Void
        let cancelTimer: () -> Void
    }
    /// Issuer name → the requests waiting for its refetch, by a number of their own (a timer
    /// removes its waiter without scanning the others).
    private var waiting: [String: [Int: Waiter]] = [:]
    /// Issuers whose refetch this worker has asked for and not yet heard back about.
    private var refetching: Set<String> = []
    private var nextWaiter = 0
    private let startTimer: StartTimer?

    /// `startTimer` nil: a request waits for the refetch however long it takes (tests of
    /// the single-refetch rule that have no loop).
    init(startTimer: StartTimer? = nil) {
        self.startTimer = startTimer
    }

    subscript(issuer issuer: String) -> JWKSet? { keys[issuer] }

    func update(_ issuer: String, _ set: JWKSet) {
        keys[issuer] = set
        onUpdate?(issuer)
    }

    /// Requests of this worker waiting on `issuer`'s refetch now.
    func waiters(of issuer: String) -> Int { waiting[issuer]?.count ?? 0 }

    /// Runs `attempt`. If `unknownKey` finds that the outcome failed on a missing key, and names
    /// the issuer, that issuer's keys are refetched once and `attempt` runs again when the
    /// refetch ends or the issuer's wait bound passes, whichever is first; `done` gets the last
    /// outcome, now or later on this loop, exactly once.
    func verify<Outcome>(
        _ attempt: @escaping () -> Outcome, unknownKey: @escaping (Outcome) -> String?,
        done: @escaping (Outcome) -> Void
    ) {
        let first = attempt()
        guard let issuer = unknownKey(first), requestRefetch != nil else {
            done(first)
            return
        }
        let wait = refetchWait[issuer] ?? Self.defaultRefetchWait
        guard wait > 0 || startTimer == nil else {
            // No wait at all: the verdict now, the refetch for the requests after it.
            startRefetch(issuer)
            done(first)
            return
        }
        let id = nextWaiter
        nextWaiter += 1
        let cancel =
            startTimer?(wait) { [weak self] in
                // The bound passed first: the verdict on the keys at hand; the fetch goes on.
                guard let self, self.waiting[issuer]?.removeValue(forKey: id) != nil else { return }
                done(attempt())
            } ?? {}
        waiting[issuer, default: [:]][id] = Waiter(resume: { done(attempt()) }, cancelTimer: cancel)
        startRefetch(issuer)
    }

    /// Asks for `issuer`'s refetch unless this worker already has.
    private func startRefetch(_ issuer: String) {
        guard let requestRefetch, refetching.insert(issuer).inserted else { return }
        requestRefetch(issuer) { [weak self] set in self?.refetched(issuer, set) }
    }

    /// The refetch ended: every request still waiting on `issuer` is tried again.
    private func refetched(_ issuer: String, _ set: JWKSet?) {
        refetching.remove(issuer)
        if let set { update(issuer, set) }
        guard let waiters = waiting.removeValue(forKey: issuer) else { return }
        for waiter in waiters.values {
            waiter.cancelTimer()
            waiter.resume()
        }
    }

    /// `unknownKey` for verifiers that throw `JOSEError`: a missing key of `issuer`.
    static func missingKey<Value>(of issuer: String) -> (Result<Value, Error>) -> String? {
        { outcome in
            if case .failure(let e as JOSEError) = outcome, e.code == .keyNotFound { return issuer }
            return nil
        }
    }
}
