import Foundation
import JOSE
import Reactor

/// The process's `store:`, made once at start (a reload keeps it): every per-worker store
/// comes from here. With `memory`, what workers must share lives in this process — one
/// replay cache for all workers (a proof replayed to another worker is caught too), the
/// ended-sessions list and the hosted request objects (`LoginShared`); sessions and pending
/// logins live in sealed cookies. With `redis`, each worker has its own client on its own
/// loop (`RedisClients`) and everything shared lives in Redis.
final class StoreBackend {
    enum Kind {
        case memory(MemoryReplayCache)
        case redis(RedisClients, prefix: String)
    }

    let kind: Kind
    /// Process-wide login state: the refresh coordinator always; ended sessions and hosted
    /// request objects when there is no Redis to keep them.
    let loginShared: LoginShared
    /// What the modules keep for the process (`GatewayModule.Shared`).
    let moduleParts = ProcessModuleParts()
    /// Tokens the gateway gets for itself (client credentials: PDPs', upstreams'), asked for
    /// once per process and shared by its workers.
    let grantTokens = ProcessGrantTokens()

    init(_ store: StoreConfig, replayCapacity: Int, loginShared: LoginShared = LoginShared()) {
        self.loginShared = loginShared
        switch store {
        case .memory:
            kind = .memory(MemoryReplayCache(capacity: replayCapacity))
        case .redis(let url, let prefix):
            guard let deployment = RedisDeployment(url: url) else {
                preconditionFailure("store URL was validated by the config parser")
            }
            kind = .redis(RedisClients(deployment: deployment), prefix: prefix)
        }
    }

    /// The Redis deployment, for the store's health check; nil for the memory store.
    var redisDeployment: RedisDeployment? {
        if case .redis(let clients, _) = kind { return clients.deployment }
        return nil
    }

    /// The Redis client of `loop` and the keys' prefix; nil for the memory store.
    func redis(for loop: EventLoop) -> (client: Redis, prefix: String)? {
        if case .redis(let clients, let prefix) = kind { return (clients.client(for: loop), prefix) }
        return nil
    }

    /// The DPoP replay store of the worker on `loop` (RFC 9449 §11.1).
    func replay(for loop: EventLoop) -> ReplayStore {
        switch kind {
        case .memory(let shared): return shared
        case .redis(let clients, let prefix): return RedisReplayStore(client: clients.client(for: loop), prefix: prefix)
        }
    }

    /// The worker's session and pending-login stores and request-object host, rebuilt with
    /// each config (keys and timeouts change).
    func loginStores(
        for loop: EventLoop, config: GatewayConfig, settings: LoginSettings, wallClock: any WallClock
    ) -> LoginStores {
        let cookiePending = {
            CookiePendingLogins(
                sealer: settings.sealer, cookieName: settings.loginCookie, secure: settings.secure,
                timeout: Int64(config.session.loginTimeout), max: config.session.maxPendingLogins)
        }
        switch kind {
        case .memory:
            return LoginStores(
                sessions: CookieSessionStore(sealer: settings.sealer, ended: loginShared.ended, wallClock: wallClock),
                pendingLogins: cookiePending(), requestObjects: loginShared.requestObjects)
        case .redis(let clients, let prefix):
            let client = clients.client(for: loop)
            let pending: PendingLoginStore =
                config.session.pendingLoginsInCookie
                ? StoreCheckedPendingLogins(cookiePending(), sessionStore: client)
                : RedisPendingLogins(
                    client: client, prefix: prefix, sealer: settings.sealer, cookieName: settings.loginCookie,
                    secure: settings.secure, timeout: Int64(config.session.loginTimeout),
                    max: config.session.maxPendingLogins)
            return LoginStores(
                sessions: RedisSessionStore(
                    client: client, prefix: prefix, sealer: settings.sealer, cacheTTL: config.session.cacheTTL,
                    wallClock: wallClock),
                pendingLogins: pending,
                requestObjects: RedisRequestObjects(client: client, prefix: prefix, sealer: settings.sealer))
        }
    }

    /// An AS's answers (introspection, exchanged tokens) shared across workers and replicas;
    /// none with the memory store.
    func sharedAnswers(_ answers: SharedAnswerCache.Kind, for loop: EventLoop) -> SharedAnswerCache? {
        guard case .redis(let clients, let prefix) = kind else { return nil }
        return SharedAnswerCache(client: clients.client(for: loop), prefix: prefix, kind: answers)
    }
}
