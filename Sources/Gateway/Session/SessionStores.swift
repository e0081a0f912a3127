import Foundation
import Reactor

/// Builds each worker's session store and request-object host from `store:` — the sealed
/// cookie itself and this process's memory (embedded default), or Redis (the worker's one
/// connection, `RedisClients`).
enum SessionStores {
    static func factory(_ store: StoreConfig, redis: RedisClients?, shared: LoginShared) -> (EventLoop, GatewayConfig, LoginSettings) -> SessionStore {
        let clock = { Int64(Date().timeIntervalSince1970) }
        switch (store, redis) {
        case (.redis(_, let prefix), let redis?):
            return { loop, config, settings in
                RedisSessionStore(client: redis.client(for: loop), prefix: prefix, sealer: settings.sealer, cacheTTL: config.session.cacheTTL, clock: clock)
            }
        default:
            return { _, _, settings in CookieSessionStore(sealer: settings.sealer, ended: shared.ended, clock: clock) }
        }
    }

    /// Where hosted request objects live: this process, or Redis (any replica can serve them).
    static func requestObjects(_ store: StoreConfig, redis: RedisClients?, shared: LoginShared) -> (EventLoop) -> RequestObjectHost {
        if case .redis(_, let prefix) = store, let redis {
            return { loop in RedisRequestObjects(client: redis.client(for: loop), prefix: prefix) }
        }
        return { _ in shared.requestObjects }
    }
}
