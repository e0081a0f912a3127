import Reactor

/// The replay store of replicas: one Redis for all of them, one `SET key 1 NX EX ttl` per
/// proof (RFC 9449 §11.1) — one round trip, atomic, and the key expires with the proof. A
/// worker has its own client on its own loop; nothing blocks. If Redis cannot answer, the
/// verdict is `unavailable` and the request fails closed: a proof that might be a replay is
/// never accepted. Redis must keep the entries: run it with `maxmemory-policy noeviction`
/// (an evicting policy could drop a live entry and let its proof be replayed).
final class RedisReplayStore: ReplayStore {
    private let client: Redis
    private let prefix: String

    init(client: Redis, prefix: String, clockSkewMargin: Int64 = 10) {
        self.client = client
        self.prefix = prefix
        self.clockSkewMargin = clockSkewMargin
    }

    /// Replicas' clocks differ: an entry written by a fast one would expire early for the
    /// others, so it is kept this much longer (seconds).
    private let clockSkewMargin: Int64

    func claim(_ id: ReplayID, kind: ReplayKind, until: Int64, now: Int64, done: @escaping (ReplayVerdict) -> Void) {
        let ttl = max(1, until - now) + clockSkewMargin
        client.send(["SET", "\(prefix)\(kind.rawValue):\(id.text)", "1", "NX", "EX", String(ttl)]) { result in
            switch result {
            case .success(.status(let s)) where s == "OK": done(.fresh)
            case .success(.null): done(.replayed)
            case .success(let other): done(.refused("Redis answered \(other)"))
            case .failure(let e): done(.unavailable("\(e)"))
            }
        }
    }
}

/// Builds each worker's replay store from `store:`.
