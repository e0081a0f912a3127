public import JOSE

/// Proof keys already imported, by the exact bytes of the proof's protected header: a client
/// signs every proof with the same key (and header), so the key import — EVP_PKEY_fromdata and
/// the on-curve check — and the RFC 7638 thumbprint happen once per key instead of once per
/// request. Only what the header bytes determine is reused; every proof's signature, claims
/// and replay are still checked. Bounded, oldest out first. One per event loop (not
/// thread-safe).
public final class DPoPKeyCache {
    public let capacity: Int
    private var entries: [ArraySlice<UInt8>: (key: JWK, jkt: String)] = [:]
    private var order: [ArraySlice<UInt8>] = []
    private var head = 0
    public private(set) var hits = 0

    public init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    func get(_ header: ArraySlice<UInt8>) -> (key: JWK, jkt: String)? {
        guard let e = entries[header] else { return nil }
        hits += 1
        return e
    }

    func put(_ header: ArraySlice<UInt8>, key: JWK, jkt: String) {
        // A copy of the bytes: the slice would otherwise keep the whole proof alive.
        let stored = ArraySlice(Array(header))
        guard entries[stored] == nil, stored.count <= 2048 else { return }
        if entries.count >= capacity {
            entries[order[head]] = nil
            head += 1
            if head > 1024 && head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
        }
        entries[stored] = (key, jkt)
        order.append(stored)
    }
}
