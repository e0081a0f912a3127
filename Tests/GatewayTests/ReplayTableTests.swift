import Testing

@testable import Gateway

/// The packed replay table against the plainest model: a dictionary of id → until, swept
/// of expired ids before every claim. Small tables, short lifetimes and a moving clock make
/// probe chains long and full of expired slots, where a reused slot could hide a live id.
@Suite("Replay table: packed slots against a dictionary")
struct ReplayTableTests {
    /// A deterministic generator (SplitMix64), so a failure can be replayed.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_CE4E_5BB9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    @Test(arguments: [1, 7, 64, 300])
    func agreesWithADictionary(limit: Int) {
        var random = Random(state: UInt64(limit))
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
                #expect(table.contains(probe, hash: ReplayTable.hash(probe), now: now) == (model[probe].map { $0 > now } ?? false))
            }
        }
    }

    @Test func anIdKeptPastTheEpochLimitStaysKept() {
        var table = ReplayTable()
        let id = ReplayID(jkt: "k", jti: "far")
        #expect(table.claim(id, hash: ReplayTable.hash(id), until: .max, now: 0, limit: 10) == .fresh)
        #expect(table.claim(id, hash: ReplayTable.hash(id), until: .max, now: 4_000_000_000, limit: 10) == .replayed)
    }

    /// 100,000 live ids over the default 64 shards: about 20 bytes a slot, at most twice
    /// the slots needed, so well under 5 MB where the dictionary and queue took about 10.
    @Test func manyLiveIdsAreAllKept() {
        let cache = MemoryReplayCache(capacity: 1_000_000)
        let now: Int64 = 1_700_000_000
        let ids = (0..<100_000).map { ReplayID(jkt: "k", jti: "\($0)") }
        #expect(ids.allSatisfy { cache.claim($0, until: now + 60, now: now) == .fresh })
        #expect(ids.allSatisfy { cache.claim($0, until: now + 60, now: now) == .replayed })
        #expect(cache.count == 100_000)
    }
}
