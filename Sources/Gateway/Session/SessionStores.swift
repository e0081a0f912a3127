import Foundation
import Reactor

/// Builds each worker's session store from `store:` — the sealed cookie itself (embedded
/// default), or Redis (one client per worker, on its loop).
enum SessionStores {
    static func factory(_ store: StoreConfig, shared: LoginShared) -> (EventLoop, GatewayConfig, LoginSettings) -> SessionStore {
        let clock = { Int64(Date().timeIntervalSince1970) }
        switch store {
        case .memory:
            return { _, _, settings in CookieSessionStore(sealer: settings.sealer, ended: shared.ended, clock: clock) }
        case .redis(let url, let prefix):
            guard let endpoint = RedisEndpoint(url: url) else { preconditionFailure("store URL was validated by the config parser") }
            let clients = ClientsByLoop()
            return { loop, config, settings in
                // One connection per worker, kept across config reloads (the store is fixed at start).
                let client = clients.client(for: loop) { RedisClient(loop: loop, endpoint: endpoint) }
                return RedisSessionStore(client: client, prefix: prefix, sealer: settings.sealer, cacheTTL: config.session.cacheTTL, clock: clock)
            }
        }
    }
}

/// Each worker's Redis client for sessions; workers apply a reloaded config at the same time
/// on their own threads, so the table has a lock.
private final class ClientsByLoop: @unchecked Sendable {
    private let lock = NSLock()
    private var clients: [ObjectIdentifier: RedisClient] = [:]

    func client(for loop: EventLoop, make: () -> RedisClient) -> RedisClient {
        lock.withLock {
            if let c = clients[ObjectIdentifier(loop)] { return c }
            let c = make()
            clients[ObjectIdentifier(loop)] = c
            return c
        }
    }
}
