import Foundation
import JOSE
import Logging

/// A worker's side of the rate limits: the store, the keyed digest that names a key in it,
/// the keys known to be over their limit (answered here until their retry time, so a flood
/// costs no store traffic: a key's state only moves later while it is refused), and the
/// counters. Loop-thread only; the store is the process's or Redis.
final class RateLimiter {
    let store: RateLimitStore
    /// The store's name for the status page and logs.
    let storeName: String
    /// Keys the store holds are HMAC-SHA-256 digests under this key, never the raw `sub`,
    /// token or address. With Redis every replica must agree on it: derived from the first
    /// `session.keys` key (config validation requires one); else the process's random key,
    /// the same for all its workers (they share the memory store's budgets).
    private var digestKey: MACKey
    private let processKey: [UInt8]
    /// Keys refused by the store: until when they stay refused, and when their budget is
    /// whole again (the worker's monotonic µs).
    private var refusedUntil: [String: (until: Int64, resetAt: Int64)] = [:]
    /// Callers' store keys, by policy, then value (cleared with the digest key): two lookups
    /// and no key text made per request.
    private var storeKeys: [String: [String: String]] = [:]
    private var storeKeyCount = 0
    /// Bumped with the digest key: a store key kept elsewhere (`KnownStoreKey`) stands only
    /// under the generation it was made in.
    private(set) var keyGeneration = 0
    private(set) var metrics = RateLimitMetrics()
    private var lastFailureLog = -Double.infinity
    private let log: Logger
    private let clock: () -> Int64

    static let memoCapacity = 10_000
    /// At most one store-failure line per this many seconds.
    static let failureLogInterval = 10.0

    init(
        store: RateLimitStore, storeName: String, processKey: [UInt8], log: Logger,
        clock: @escaping () -> Int64 = MemoryRateLimits.monotonicMicroseconds
    ) {
        self.processKey = processKey
        self.store = store
        self.storeName = storeName
        self.log = log
        self.clock = clock
        digestKey = MACKey(secret: processKey)!
    }

    /// A new config's session keys (the digests' key).
    func apply(_ config: GatewayConfig) {
        let base = config.session.keys.first ?? processKey
        let derived = MACKey(secret: base)!.authenticate(Array("tokengate rate-limit keys".utf8))
        digestKey = MACKey(secret: derived)!
        refusedUntil.removeAll()
        storeKeys.removeAll()
        storeKeyCount = 0
        keyGeneration += 1
    }

    /// The store's name for `value` under `policy`: 128 bits of the keyed digest, base64url.
    /// A caller's key is worked out once and kept (a caller comes again and again; an HMAC
    /// and its encoding cost more than the rest of the count).
    func storeKey(policy: String, value: String) -> String {
        if let known = storeKeys[policy]?[value] { return known }
        let key = Base64URL.encode(digestKey.authenticate(Array((policy + "\u{0}" + value).utf8)).prefix(16))
        if storeKeyCount >= Self.memoCapacity {
            storeKeys.removeAll(keepingCapacity: true)
            storeKeyCount = 0
        }
        storeKeys[policy, default: [:]][value] = key
        storeKeyCount += 1
        return key
    }

    /// Where a request with `value` counts under `policy`; first looked up among the
    /// partitions a connection's token already used (`KnownStoreKeys`, on its `BearerMemo`):
    /// a memo-admitted request's caller is the memo's, so its store key is found with a
    /// compare or two and no hashing.
    func partition(_ policy: RateLimitPolicy, value: String, memo: BearerMemo?) -> RateLimitPartition {
        guard let memo else {
            return RateLimitPartition(
                value: value, rule: policy.rule(for: value), storeKey: storeKey(policy: policy.name, value: value))
        }
        let known = memo.kept.value(KnownStoreKeys.Key.self, orMake: KnownStoreKeys.init)
        for k in known.keys where k.generation == keyGeneration && k.partition.value == value && k.policy == policy.name
        {
            return k.partition
        }
        let partition = RateLimitPartition(
            value: value, rule: policy.rule(for: value), storeKey: storeKey(policy: policy.name, value: value))
        known.keys.removeAll { $0.generation != keyGeneration }
        if known.keys.count < KnownStoreKeys.perMemo {
            known.keys.append(KnownStoreKey(policy: policy.name, partition: partition, generation: keyGeneration))
        }
        return partition
    }

    /// The partition `memo`'s token counted in under `policy` before, under the current
    /// digest key, without the request's value: only for a key the token alone fixes
    /// (`RateLimitKey.fixedByToken`), whose value every request admitted with the memo
    /// shares, so building it again (issuer, NUL, claim) would find the same one.
    func knownPartition(_ policy: RateLimitPolicy, memo: BearerMemo) -> RateLimitPartition? {
        guard let known = memo.kept[KnownStoreKeys.Key.self] else { return nil }
        for k in known.keys where k.generation == keyGeneration && k.policy == policy.name { return k.partition }
        return nil
    }

    /// Whether `takeNow` can answer (the memory store), so no request waits on the store.
    var answersAtOnce: Bool { store.answersAtOnce }

    /// One request taken from `partition`'s budget.
    func take(_ partition: RateLimitPartition, done: @escaping (Result<GCRA.Decision, RateLimitStoreError>) -> Void) {
        let key = partition.storeKey
        if let refusal = memoRefusal(key) { return done(.success(refusal)) }
        store.take(key, partition.rule.cell) { [self] result in
            remember(key, result)
            done(result)
        }
    }

    /// `take`, answered now; only when `answersAtOnce`.
    func takeNow(_ partition: RateLimitPartition) -> Result<GCRA.Decision, RateLimitStoreError> {
        let key = partition.storeKey
        if let refusal = memoRefusal(key) { return .success(refusal) }
        let result = store.takeNow(key, partition.rule.cell)
        remember(key, result)
        return result
    }

    /// The store's last refusal of `key`, while it still holds.
    private func memoRefusal(_ key: String) -> GCRA.Decision? {
        guard !refusedUntil.isEmpty, let memo = refusedUntil[key] else { return nil }
        let now = clock()
        if now < memo.until {
            return .init(allowed: false, remaining: 0, retryAfter: memo.until - now, reset: memo.resetAt - now)
        }
        refusedUntil[key] = nil
        return nil
    }

    private func remember(_ key: String, _ result: Result<GCRA.Decision, RateLimitStoreError>) {
        guard case .success(let d) = result, !d.allowed else { return }
        if refusedUntil.count >= Self.memoCapacity { refusedUntil.removeAll() }
        let at = clock()
        refusedUntil[key] = (at + d.retryAfter, at + d.reset)
    }

    func countRefusal(route: String, policy: String) { metrics.refused[route + "\u{0}" + policy, default: 0] += 1 }

    /// Counts a store failure and logs it, at most once per `failureLogInterval`.
    func storeFailed(_ error: RateLimitStoreError, policy: String, now: Double) {
        metrics.storeFailures += 1
        if now - lastFailureLog >= Self.failureLogInterval {
            lastFailureLog = now
            log.warning(
                "rate-limit store failed",
                metadata: ["store": "\(storeName)", "policy": "\(policy)", "error": "\(error.message)"])
        }
    }
}

/// Rate-limit counters of one worker (and, added up, of the process).
struct RateLimitMetrics: Sendable {
    /// Refusals by route and policy (`route\0policy`).
    var refused: [String: Int] = [:]
    var storeFailures = 0

    mutating func add(_ o: RateLimitMetrics) {
        refused.merge(o.refused, uniquingKeysWith: +)
        storeFailures += o.storeFailures
    }

    func write(to out: inout PrometheusText) {
        out.family(
            "tokengate_rate_limited_total", .counter, help: "Requests refused by a rate limit, by route and policy.")
        for (key, n) in refused.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            out.sample("tokengate_rate_limited_total", [("route", parts[0]), ("policy", parts.last ?? "")], n)
        }
        out.single(
            "tokengate_rate_limit_store_failures_total", .counter,
            help: "Rate-limit store calls that failed (on_store_failure decided).", storeFailures)
    }
}
