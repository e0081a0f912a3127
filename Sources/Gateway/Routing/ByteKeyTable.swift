/// FNV-1a (64-bit), fed one byte at a time: a scan over a path holds the hash of every
/// prefix it has passed, so looking up each of them costs one probe, not a new hash over
/// the prefix. The hash only picks where to look: `ByteKeyTable` always compares the bytes,
/// so a collision, chance or chosen, costs one comparison and never a wrong answer.
struct PrefixHash {
    static let empty: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01b3

    @inline(__always)
    static func adding(_ byte: UInt8, to hash: UInt64) -> UInt64 { (hash ^ UInt64(byte)) &* prime }

    static func of<S: Sequence<UInt8>>(_ bytes: S) -> UInt64 {
        bytes.reduce(empty) { adding($1, to: $0) }
    }
}

/// Byte strings to values, looked up by a hash the caller has already computed as it
/// scanned (`PrefixHash`), and by a comparison of the key bytes the caller supplies. Built
/// once per config; never changed after.
struct ByteKeyTable<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        let start: Int32
        let count: Int32
        /// The next entry with the same hash, or -1.
        let next: Int32
        let value: Value
    }

    /// Hash → the first entry with it.
    private let heads: [UInt64: Int32]
    private let entries: [Entry]
    /// Every key's bytes, one after another.
    private let bytes: [UInt8]
    /// Which key lengths below `lengthLimit` occur, one bit each: a scan skips the probes
    /// for lengths no key has, which is most of them.
    private let lengths: [UInt64]
    private static var lengthLimit: Int { 64 * 64 }
    /// The longest key: no probe past it (a long path's many slashes cost a comparison each).
    private let longest: Int

    var isEmpty: Bool { entries.isEmpty }

    /// `items`: distinct keys, each with the hash a lookup will use for it.
    init(_ items: [(key: [UInt8], hash: UInt64, value: Value)]) {
        var heads: [UInt64: Int32] = [:]
        var entries: [Entry] = []
        var bytes: [UInt8] = []
        var lengths = [UInt64](repeating: 0, count: ByteKeyTable.lengthLimit / 64)
        entries.reserveCapacity(items.count)
        for item in items {
            let n = entries.count
            entries.append(
                Entry(
                    start: Int32(bytes.count), count: Int32(item.key.count), next: heads[item.hash] ?? -1,
                    value: item.value))
            heads[item.hash] = Int32(n)
            bytes.append(contentsOf: item.key)
            if item.key.count < ByteKeyTable.lengthLimit { lengths[item.key.count >> 6] |= 1 << (item.key.count & 63) }
        }
        self.heads = heads
        self.entries = entries
        self.bytes = bytes
        self.lengths = lengths
        longest = items.map(\.key.count).max() ?? -1
    }

    /// False when no key is `length` bytes long (then a lookup of that length cannot hit).
    @inline(__always)
    func mayHold(length: Int) -> Bool {
        if length >= ByteKeyTable.lengthLimit { return length <= longest }
        return lengths[length >> 6] & (1 << (length & 63)) != 0
    }

    /// The value of the key with `hash` whose bytes `isKey` accepts.
    func find(hash: UInt64, where isKey: (Span<UInt8>) -> Bool) -> Value? {
        guard var i = heads[hash] else { return nil }
        let entries = self.entries.span
        let bytes = self.bytes.span
        while i >= 0 {
            let e = entries[Int(i)]
            if isKey(bytes.extracting(Int(e.start)..<Int(e.start + e.count))) { return e.value }
            i = e.next
        }
        return nil
    }
}
