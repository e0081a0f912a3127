/// A bounded cache of validated tokens for one worker (no locks: one loop uses it). Keyed by
/// the token bytes; an entry lives until min(token expiry, ttl). Bounded in entries and in
/// key bytes: when either is full, the oldest insertions go first (FIFO), so a flood of
/// distinct (or large) tokens cannot grow it.
public struct ValidatedTokenCache<Value> {
    public let capacity: Int
    public let maxBytes: Int
    public let ttl: Int64
    public private(set) var bytes = 0
    // Inlinable lookups: specialized for the caller's `Value` in its module, instead of a
    // generic dictionary lookup through metadata on every request.
    @usableFromInline var entries: [String: (value: Value, expires: Int64)] = [:]
    /// Insertion order; `order[head...]` are live.
    private var order: [String] = []
    private var head = 0
    @usableFromInline var hitCount = 0
    @usableFromInline var missCount = 0
    public var hits: Int { hitCount }
    public var misses: Int { missCount }

    public init(capacity: Int = 10_000, maxBytes: Int = 8 << 20, ttl: Int64 = 300) {
        self.capacity = max(1, capacity)
        self.maxBytes = maxBytes
        self.ttl = ttl
    }

    public var count: Int { entries.count }

    @inlinable
    public mutating func get(_ token: String, now: Int64) -> Value? {
        if let e = entries[token], e.expires > now {
            hitCount += 1
            return e.value
        }
        missCount += 1
        return nil
    }

    /// Until when `token` is trusted without another check (its entry's expiry), if it is
    /// cached and still live; not counted as a hit or a miss.
    public func expiry(of token: String, now: Int64) -> Int64? {
        guard let e = entries[token], e.expires > now else { return nil }
        return e.expires
    }

    public mutating func put(_ token: String, _ value: Value, expiresAt: Int64, now: Int64) {
        let expires = min(expiresAt, now + ttl)
        let size = token.utf8.count
        guard expires > now, size <= maxBytes else { return }
        if entries[token] == nil {
            while head < order.count && (entries.count >= capacity || bytes + size > maxBytes) { evictOldest() }
            order.append(token)
            bytes += size
        }
        entries[token] = (value, expires)
    }

    private mutating func evictOldest() {
        let oldest = order[head]
        head += 1
        if entries.removeValue(forKey: oldest) != nil { bytes -= oldest.utf8.count }
        // Compact the queue now and then instead of shifting on every eviction.
        if head > 1024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
