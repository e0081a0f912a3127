import TestSupport
import Testing

@testable import Gateway

/// The packed replay table against the plainest model: a dictionary of id → until, swept
/// of expired ids before every claim. Small tables, short lifetimes and a moving clock make
/// probe chains long and full of expired slots, where a reused slot could hide a live id.
@Suite("Replay table: packed slots against a dictionary")
struct ReplayTableTests {
    @Test(arguments: [1, 7, 64, 300])
    func agreesWithADictionary(limit: Int) {
        var random = SeededRandom(state: UInt64(limit))
        var table = ReplayTable()
        var model: [ReplayID: Int64] = [:]
        var now: Int64 = 1_700_000_000
        // Few distinct ids, so that they come back while kept and after they expired.
        let ids = (0..<(limit * 3 + 10)).map { ReplayID(jkt: "k", jti: "\($0)") }
        for step in 0..<40_000 {
            if random.below(8) == 0 { now += Int64(random.below(3)) }
            let id = ids[random.below(ids.count)]
            let until = now + Int64(random.below(6))
            model = model.filter { $0.value > now }
            let want: ReplayVerdict
            if model[id] != nil {
                want = .replayed
            } else if model.count >= limit {
                want = .refused("the in-memory replay cache is full")
            } else {
                model[id] = until
                want = .fresh
            }
            let got = table.claim(id, hash: ReplayTable.hash(id), until: until, now: now, limit: limit)
            if got != want {
                Issue.record("step \(step), limit \(limit): \(got), the model says \(want)")
                return
            }
            for probe in ids.prefix(8) {
                let kept = model[probe].map { $0 > now } ?? false
                #expect(table.contains(probe, hash: ReplayTable.hash(probe), now: now) == kept)
            }
        }
    }

    @Test func anIdKeptPastTheEpochLimitStaysKept() {
        var table = ReplayTable()
        let id = ReplayID(jkt: "k", jti: "far")
        #expect(table.claim(id, hash: ReplayTable.hash(id), until: .max, now: 0, limit: 10) == .fresh)
        #expect(table.claim(id, hash: ReplayTable.hash(id), until: .max, now: 4_000_000_000, limit: 10) == .replayed)
    }

    /// A proof id is kept while `now < until`: replayed in the last second, free again at
    /// `until` (the authenticator passes the proof's last acceptable second + 1).
    @Test func anIdIsReplayedUntilItsLastSecond() {
        var table = ReplayTable()
        let id = ReplayID(jkt: "k", jti: "edge")
        let h = ReplayTable.hash(id)
        #expect(table.claim(id, hash: h, until: 1_000, now: 900, limit: 10) == .fresh)
        #expect(table.claim(id, hash: h, until: 1_000, now: 999, limit: 10) == .replayed)
        #expect(table.contains(id, hash: h, now: 999))
        #expect(!table.contains(id, hash: h, now: 1_000))
    }

    /// A full shard refuses new ids and still knows every live one: it never forgets an id
    /// (which would let its proof be replayed) to make room.
    @Test func aFullShardRefusesAndForgetsNothing() {
        var table = ReplayTable()
        let ids = (0..<8).map { ReplayID(jkt: "k", jti: "full\($0)") }
        for id in ids { #expect(table.claim(id, hash: ReplayTable.hash(id), until: 100, now: 0, limit: 8) == .fresh) }
        let extra = ReplayID(jkt: "k", jti: "one too many")
        guard case .refused = table.claim(extra, hash: ReplayTable.hash(extra), until: 100, now: 0, limit: 8) else {
            Issue.record("a full shard took another id")
            return
        }
        let replays = ids.map { table.claim($0, hash: ReplayTable.hash($0), until: 100, now: 50, limit: 8) }
        #expect(replays.allSatisfy { $0 == .replayed })
        // Once they expire there is room again.
        #expect(table.claim(extra, hash: ReplayTable.hash(extra), until: 200, now: 100, limit: 8) == .fresh)
    }

    /// 100,000 live ids over the default 64 shards: about 20 bytes a slot, at most twice
    /// the slots needed, so well under 5 MB where the dictionary and queue took about 10.
    @Test func manyLiveIdsAreAllKept() {
        let cache = MemoryReplayCache(capacity: 1_000_000)
        let now: Int64 = 1_700_000_000
        let ids = (0..<100_000).map { ReplayID(jkt: "k", jti: "\($0)") }
        #expect(ids.allSatisfy { cache.claim($0, until: now + 60, now: now) == .fresh })
        #expect(ids.allSatisfy { cache.claim($0, until: now + 60, now: now) == .replayed })
        #expect(cache.count(now: now) == 100_000)
    }
}
