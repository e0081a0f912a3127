/// The rate-limit policy that refused a request, in its state: its server span names it.
final class RateLimitRefusal {
    enum Key: RequestStateKey { typealias Value = RateLimitRefusal }
    let policy: String

    init(policy: String) { self.policy = policy }
}

/// The store keys a connection's token used, kept beside its `BearerMemo` (`TokenMemoKey`):
/// the token's next request finds its key with a compare or two (`RateLimiter.storeKey`).
final class KnownStoreKeys {
    enum Key: TokenMemoKey { typealias Value = KnownStoreKeys }
    /// A route lists a few policies; past this many, keys are made the usual way.
    static let perMemo = 4
    var keys: [KnownStoreKey] = []
}

/// A caller's partition under one policy, kept for its token's next requests.
struct KnownStoreKey {
    let policy: String
    let partition: RateLimitPartition
    /// `RateLimiter.keyGeneration` when it was made.
    let generation: Int
}

/// Where one request counts under one policy: its key's value, the rule that value is
/// under (`overrides`), and the store's name for it (`RateLimiter.storeKey`).
struct RateLimitPartition {
    let value: String
    let rule: RateLimitRule
    let storeKey: String
}
