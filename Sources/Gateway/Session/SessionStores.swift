import Foundation
import Reactor

/// A worker's stores for browser logins, rebuilt with each config (keys and timeouts change).
struct LoginStores {
    let sessions: SessionStore
    let pendingLogins: PendingLoginStore
    /// Hosted request objects (`request_mode: request_uri`).
    let requestObjects: RequestObjectHost
}

/// Builds each worker's session and pending-login stores and request-object host from
/// `store:` — the sealed cookie itself and this process's memory (embedded default), or Redis
/// (the worker's one connection, `RedisClients`).
enum SessionStores {
    static func factory(_ store: StoreConfig, redis: RedisClients?, shared: LoginShared) -> (EventLoop, GatewayConfig, LoginSettings) -> LoginStores {
        let clock = { Int64(Date().timeIntervalSince1970) }
        func cookiePendingLogins(_ config: GatewayConfig, _ settings: LoginSettings) -> PendingLoginStore {
            CookiePendingLogins(sealer: settings.sealer, cookieName: settings.loginCookie, secure: settings.secure,
                                timeout: Int64(config.session.loginTimeout), max: config.session.maxPendingLogins)
        }
        switch (store, redis) {
        case (.redis(_, let prefix), let redis?):
            return { loop, config, settings in
                let client = redis.client(for: loop)
                let pending: PendingLoginStore = config.session.pendingLoginsInCookie
                    ? cookiePendingLogins(config, settings)
                    : RedisPendingLogins(client: client, prefix: prefix, sealer: settings.sealer, cookieName: settings.loginCookie,
                                         secure: settings.secure, timeout: Int64(config.session.loginTimeout), max: config.session.maxPendingLogins)
                return LoginStores(
                    sessions: RedisSessionStore(client: client, prefix: prefix, sealer: settings.sealer, cacheTTL: config.session.cacheTTL, clock: clock),
                    pendingLogins: pending,
                    requestObjects: RedisRequestObjects(client: client, prefix: prefix, sealer: settings.sealer))
            }
        default:
            return { _, config, settings in
                LoginStores(sessions: CookieSessionStore(sealer: settings.sealer, ended: shared.ended, clock: clock),
                            pendingLogins: cookiePendingLogins(config, settings), requestObjects: shared.requestObjects)
            }
        }
    }
}
