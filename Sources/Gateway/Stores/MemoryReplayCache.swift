import Foundation

/// The in-process replay store: shared by every worker, split into shards that each have
/// their own lock, so workers rarely wait on each other. Bounded: a shard full of ids whose
/// proofs are still acceptable refuses new ones (`unavailable` → 503) instead of forgetting
/// a live id, which would let its proof be replayed.
final class MemoryReplayCache: ReplayStore, @unchecked Sendable {
    private final class Shard {
        let lock = NSLock()
        var expiry: [ReplayID: Int64] = [:]
        /// Insertion order, oldest first from `head`: proofs expire in roughly that order.
        var order: [(id: ReplayID, until: Int64)] = []
        var head = 0
    }

    private let shards: [Shard]
    private let perShard: Int

    /// Fewer shards for a small capacity: a shard refuses once it holds `capacity / shards`
    /// live ids, and ids land in shards at random, so small shards fill (and refuse) long
    /// before the cache holds `capacity` (100 over 64 shards made one id per shard).
    static let minPerShard = 1024

    init(capacity: Int, shards count: Int = 64) {
        let n = max(1, min(count, capacity / Self.minPerShard))
        shards = (0..<n).map { _ in Shard() }
        perShard = max(1, capacity / n)
    }

    var count: Int { shards.reduce(0) { n, s in s.lock.withLock { n + s.expiry.count } } }

    func claim(_ id: ReplayID, until: Int64, now: Int64, done: @escaping (ReplayVerdict) -> Void) {
        done(claim(id, until: until, now: now))
    }

    /// Whether `id` is remembered, without claiming it.
    func contains(_ id: ReplayID, now: Int64) -> Bool {
        let shard = shards[Int(UInt(bitPattern: id.hashValue) % UInt(shards.count))]
        return shard.lock.withLock { (shard.expiry[id] ?? 0) > now }
    }

    func claim(_ id: ReplayID, until: Int64, now: Int64) -> ReplayVerdict {
        // Swift's Hasher is seeded at random per process: a client cannot grind jtis that all
        // land in one shard to fill it.
        let shard = shards[Int(UInt(bitPattern: id.hashValue) % UInt(shards.count))]
        shard.lock.lock()
        defer { shard.lock.unlock() }
        if let seen = shard.expiry[id], seen > now { return .replayed }
        sweep(shard, now: now)
        if shard.expiry.count >= perShard {
            // The queue sweep stops at the first live entry; before refusing, drop every
            // expired one (rare: only when the shard looks full).
            shard.expiry = shard.expiry.filter { $0.value > now }
            shard.order = shard.order[shard.head...].filter { shard.expiry[$0.id] == $0.until }
            shard.head = 0
            if shard.expiry.count >= perShard { return .refused("the in-memory replay cache is full") }
        }
        shard.expiry[id] = until
        shard.order.append((id, until))
        return .fresh
    }

    /// Drops expired ids from the front of the queue (lock held). An id re-claimed after it
    /// expired has a newer entry further back; only the entry matching the map is removed.
    private func sweep(_ shard: Shard, now: Int64) {
        while shard.head < shard.order.count {
            let (id, until) = shard.order[shard.head]
            guard until <= now else { break }
            if shard.expiry[id] == until { shard.expiry.removeValue(forKey: id) }
            shard.head += 1
        }
        if shard.head > 4096 && shard.head * 2 > shard.order.count {
            shard.order.removeFirst(shard.head)
            shard.head = 0
        }
    }
}
