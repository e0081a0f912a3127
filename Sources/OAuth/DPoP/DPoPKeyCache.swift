import Glibc
import JOSE

/// Proof keys already imported, by the exact bytes of the proof's protected header: a client
/// signs every proof with the same key (and header), so the header's decoding and checks, the
/// key import — EVP_PKEY_fromdata and the on-curve check — and the RFC 7638 thumbprint happen
/// once per key instead of once per request. Only what the header bytes determine is reused;
/// every proof's signature, claims and replay are still checked. Bounded, oldest out first.
/// One per event loop (not thread-safe).
public final class DPoPKeyCache {
    /// What one header's bytes decided: the parsed header (RFC 9449 §4.3 check 7 passed on
    /// its `jwk`), the key imported from it, and that key's thumbprint.
    struct Entry {
        let header: JWSHeader
        let key: JWK
        let jkt: String
    }

    /// The encoded header bytes, hashed in one pass over the buffer (an `ArraySlice<UInt8>`
    /// key hashed byte by byte: about 10,000 instructions for a P-256 header). Every byte
    /// counts in both the hash and the equality: the bytes are the client's choice.
    struct HeaderBytes: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (a: HeaderBytes, b: HeaderBytes) -> Bool { a.bytes == b.bytes }
    }

    /// Headers longer than this are not kept (a P-256 or 4096-bit RSA key's header is shorter).
    static let maxHeaderSize = 2048

    public let capacity: Int
    private var entries: [HeaderBytes: Entry] = [:]
    /// The entry found or stored last: a client sends the same header on every proof, so
    /// one comparison of the bytes usually finds it without hashing them.
    private var last: (header: HeaderBytes, entry: Entry)?
    private var order: [HeaderBytes] = []
    private var head = 0
    public private(set) var hits = 0

    public init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    func get(_ header: UnsafeRawBufferPointer) -> Entry? {
        guard header.count > 0, header.count <= Self.maxHeaderSize else { return nil }
        if let last, last.header.bytes.count == header.count,
            last.header.bytes.withUnsafeBytes({ memcmp($0.baseAddress!, header.baseAddress!, header.count) }) == 0
        {
            hits += 1
            return last.entry
        }
        let key = HeaderBytes(bytes: Array(header))
        guard let e = entries[key] else { return nil }
        last = (key, e)
        hits += 1
        return e
    }

    func put(_ header: ArraySlice<UInt8>, _ entry: Entry) {
        guard header.count <= Self.maxHeaderSize else { return }
        let stored = HeaderBytes(bytes: Array(header))
        guard entries[stored] == nil else { return }
        if entries.count >= capacity {
            if last?.header == order[head] { last = nil }
            entries[order[head]] = nil
            head += 1
            if head > 1024 && head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
        }
        entries[stored] = entry
        order.append(stored)
        last = (stored, entry)
    }
}
