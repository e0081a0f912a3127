import Foundation

/// The in-process replay store: shared by every worker, split into shards that each have
/// their own lock, so workers rarely wait on each other. Bounded: a shard full of ids whose
/// proofs are still acceptable refuses new ones (`refused` → 503) instead of forgetting
/// a live id, which would let its proof be replayed. Each shard is a packed `ReplayTable`
/// (20 bytes a slot), so a benchmark's hundred thousand live proofs cost a few megabytes.
final class MemoryReplayCache: ReplayStore, @unchecked Sendable {
    private final class Shard {
        let lock = NSLock()
        var table = ReplayTable()
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

    /// The ids still kept at `now`. (Expired ones may hold their slots a while longer: they
    /// are dropped when a table is rebuilt, or their slots reused.)
    func count(now: Int64) -> Int { shards.reduce(0) { n, s in s.lock.withLock { n + s.table.liveCount(now: now) } } }

    func claim(_ id: ReplayID, kind: ReplayKind, until: Int64, now: Int64, done: @escaping (ReplayVerdict) -> Void) {
        done(claim(id, until: until, now: now))
    }

    /// Whether `id` is remembered, without claiming it.
    func contains(_ id: ReplayID, now: Int64) -> Bool {
        let hash = ReplayTable.hash(id)
        let shard = shard(for: hash)
        return shard.lock.withLock { shard.table.contains(id, hash: hash, now: now) }
    }

    func claim(_ id: ReplayID, until: Int64, now: Int64) -> ReplayVerdict {
        let hash = ReplayTable.hash(id)
        let shard = shard(for: hash)
        return shard.lock.withLock { shard.table.claim(id, hash: hash, until: until, now: now, limit: perShard) }
    }

    /// Swift's Hasher is seeded at random per process: a client cannot grind jtis that all
    /// land in one shard to fill it. The shard comes from the hash's high half, the slot in
    /// the shard's table from its low bits.
    private func shard(for hash: UInt) -> Shard {
        shards[Int((hash >> 32) % UInt(shards.count))]
    }
}
