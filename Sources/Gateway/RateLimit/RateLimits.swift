import JOSE
import Yams

/// Rate limits as a module: the `rate_limits:` policies, the process's table of budgets (with
/// the memory store), each worker's `RateLimiter`, its counters, and `RateLimitStage` on the
/// routes that name a policy (`rate_limit`).
enum RateLimits: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "rate_limits", type: "mapping: a policy's name to the policy (below)", defaultText: "none",
        defaultCheck: nil)
    static let sections = [ConfigSection.rateLimit, .rateLimitOverride]
    static let unset: [String: RateLimitPolicy] = [:]
    static let stages: [any ModuleStage.Type] = [RateLimitStage.self]
    static let steps = [
        ConfigStep("rate limits", .check) { cfg, top, r in
            ConfigParser.checkRateLimits(cfg, top: top, r)
        }
    ]

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: RateLimitPolicy] {
        ConfigParser.rateLimits(node, r)
    }

    /// What the workers share: the memory store's budgets, and the digests' key when no
    /// `session.keys` are configured.
    final class Shared {
        let memory = MemoryRateLimits()
        let key = SecureRandom.bytes(32)
    }

    static func makeShared(_ stores: StoreBackend) -> Shared { Shared() }

    /// The worker's limiter: over the process's table, or its own Redis client.
    static func makeService(_ shared: Shared, _ context: ModuleContext) -> RateLimiter {
        guard let redis = context.stores.redis(for: context.loop) else {
            return RateLimiter(store: shared.memory, storeName: "memory", processKey: shared.key, log: context.log)
        }
        return RateLimiter(
            store: RedisRateLimits(client: redis.client, loop: context.loop, prefix: redis.prefix),
            storeName: "redis", processKey: shared.key, log: context.log)
    }
}

extension RateLimiter: ModuleService {}
extension RateLimitMetrics: ModuleMetrics {}

extension ConfigSection {
    static let rateLimit = ConfigSection("rate_limits.NAME") { RateLimitPolicy.keyTable.docs }
    static let rateLimitOverride = ConfigSection("rate_limits.NAME.overrides.VALUE") {
        RateLimitPolicy.overrideKeyTable.docs
    }
}

extension GatewayConfig {
    /// `rate_limits:`: named policies that routes list (`rate_limit`).
    var rateLimits: [String: RateLimitPolicy] { self[module: RateLimits.self] }
}

extension WorkerServices {
    /// This worker's rate limiter.
    var rateLimits: RateLimiter { modules[RateLimits.self] }
}
