import Foundation
import Reactor

/// One Redis client per worker (standalone, TLS, Sentinel or Cluster — `Redis`) for everything
/// the worker keeps in Redis (replay entries, sessions, hosted request objects), made on first
/// use and kept across config reloads (the store is fixed at start). Workers apply a reloaded
/// config at the same time on their own threads, so the table has a lock.
final class RedisClients: @unchecked Sendable {
    private let lock = NSLock()
    private var clients: [ObjectIdentifier: Redis] = [:]
    let deployment: RedisDeployment

    init(deployment: RedisDeployment) { self.deployment = deployment }

    func client(for loop: EventLoop) -> Redis {
        lock.withLock {
            if let c = clients[ObjectIdentifier(loop)] { return c }
            let c = Redis(
                loop: loop, deployment: deployment, connectTimeout: CallBounds.redis.connect,
                commandTimeout: CallBounds.redis.total)
            clients[ObjectIdentifier(loop)] = c
            return c
        }
    }
}
