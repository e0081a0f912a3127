/// One shard's remembered proof ids, packed: an open-addressing table (linear probing) of
/// 20 bytes a slot — the 128-bit id and the Unix second until which it is kept — where a
/// dictionary plus an expiry queue took about 100 bytes an id. Expired ids are not swept one
/// by one: their slots are reused by new ids on the same probe chain, and dropped when the
/// table is rebuilt (when it reaches three quarters full, counting them, or the shard's
/// limit). Not thread-safe: the shard's lock guards it.
struct ReplayTable {
    /// The ids, by slot; meaningful where `until` is not 0.
    private var ids: [ReplayID] = []
    /// Keep the slot's id while `now < until` (Unix seconds); 0 marks an empty slot.
    private var until: [UInt32] = []
    /// Slots that are not empty: live ids and expired ones not yet dropped.
    private(set) var occupied = 0

    static let minimumSlots = 64

    /// Where a probe for an id ended.
    private enum Probe {
        /// The id is there and still kept.
        case live
        /// A slot the id may take: its own expired slot, the first expired one on its chain,
        /// or the empty slot that ends the chain (`empty` true).
        case free(Int, empty: Bool)
    }

    /// Where an id's probe starts: the process's seeded hash. The ids are SHA-256 outputs,
    /// but a client chooses their input, so positions must not come from the id's bits
    /// alone (a client could grind jtis onto one chain). The shard is picked from the high
    /// half of the same hash, the slot from the low bits.
    static func hash(_ id: ReplayID) -> UInt { UInt(bitPattern: id.hashValue) }

    /// Claims `id` (`hash` is `ReplayTable.hash(id)`) until `until`: `.fresh` the first time while it
    /// is kept, `.replayed` after; `.refused` when `limit` live ids are kept already.
    mutating func claim(_ id: ReplayID, hash: UInt, until: Int64, now: Int64, limit: Int) -> ReplayVerdict {
        if self.until.isEmpty { rebuild(slots: Self.minimumSlots, now: now) }
        guard case .free(var at, let empty) = probe(id, hash: hash, now: now) else { return .replayed }
        if empty && (occupied >= limit || (occupied + 1) * 4 > self.until.count * 3) {
            // Drop the expired ids; refuse only if the live ones fill the shard.
            let live = liveCount(now: now)
            if live >= limit { return .refused("the in-memory replay cache is full") }
            var slots = Self.minimumSlots
            while slots < (live + 1) * 2 { slots *= 2 }
            rebuild(slots: slots, now: now)
            guard case .free(let again, _) = probe(id, hash: hash, now: now) else { return .replayed }
            at = again
        }
        if self.until[at] == 0 { occupied += 1 }
        ids[at] = id
        // Kept at least one second: 0 means empty. Past 2106 (UInt32), kept until then.
        self.until[at] = UInt32(clamping: max(1, until))
        return .fresh
    }

    /// Whether `id` (`hash` is `ReplayTable.hash(id)`) is kept at `now`.
    func contains(_ id: ReplayID, hash: UInt, now: Int64) -> Bool {
        guard !until.isEmpty, case .live = probe(id, hash: hash, now: now) else { return false }
        return true
    }

    /// The whole chain is read before a slot is offered: an expired slot early on the chain
    /// must not hide the same id kept further along it.
    private func probe(_ id: ReplayID, hash: UInt, now: Int64) -> Probe {
        let mask = until.count - 1
        var i = Int(truncatingIfNeeded: hash) & mask
        var reusable: Int?
        while until[i] != 0 {
            let kept = Int64(until[i]) > now
            if ids[i] == id { return kept ? .live : .free(i, empty: false) }
            if !kept && reusable == nil { reusable = i }
            i = (i + 1) & mask
        }
        return reusable.map { .free($0, empty: false) } ?? .free(i, empty: true)
    }

    /// The ids still kept at `now` (a scan of the table: for tests and rare reads).
    func liveCount(now: Int64) -> Int {
        var n = 0
        for u in until where Int64(u) > now { n += 1 }
        return n
    }

    /// Moves the live ids into a table of `slots` slots (a power of two), dropping the rest.
    private mutating func rebuild(slots: Int, now: Int64) {
        let oldIDs = ids
        let oldUntil = until
        ids = [ReplayID](repeating: ReplayID(high: 0, low: 0), count: slots)
        until = [UInt32](repeating: 0, count: slots)
        occupied = 0
        let mask = slots - 1
        for k in 0..<oldUntil.count where Int64(oldUntil[k]) > now {
            var i = Int(truncatingIfNeeded: Self.hash(oldIDs[k])) & mask
            while until[i] != 0 { i = (i + 1) & mask }
            ids[i] = oldIDs[k]
            until[i] = oldUntil[k]
            occupied += 1
        }
    }
}
