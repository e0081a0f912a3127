import Reactor

/// Field names looked up by their bytes, ASCII-case-insensitively, each with the lists it
/// is on as bits: one lookup per field where the request path compared every field with
/// every name of several lists. Names are bucketed by length, so a field is compared with
/// the few names of its own length only.
///
/// Immutable once built: three flat arrays, read in place through spans, so that a lookup
/// is a few loads and byte compares (no reference counting per field).
struct HeaderNameTable: Sendable {
    struct Lists: OptionSet, Sendable {
        let rawValue: UInt32

        /// RFC 9110 §7.6.1 connection-specific fields (HeaderRules.hopByHop).
        static let hopByHop = Lists(rawValue: 1 << 0)
        /// Request fields the gateway sets itself (HeaderRules.recomputedOnRequest).
        static let recomputedOnRequest = Lists(rawValue: 1 << 1)
        /// Only a trusted proxy may send it (HeaderRules.trustedOnly, trusted_proxy_headers).
        static let trustedOnly = Lists(rawValue: 1 << 2)
        /// Response fields the gateway sets itself (X-Request-Id).
        static let recomputedOnResponse = Lists(rawValue: 1 << 3)
        /// A configured identity header: never passed from a client.
        static let identity = Lists(rawValue: 1 << 4)
        /// A credential a CORS preflight never carries upstream (CORSPreflight).
        static let credential = Lists(rawValue: 1 << 5)
        static let authorization = Lists(rawValue: 1 << 6)
        static let dpop = Lists(rawValue: 1 << 7)
        static let cookie = Lists(rawValue: 1 << 8)
        /// W3C Trace Context's `traceparent` and `tracestate`.
        static let traceContext = Lists(rawValue: 1 << 9)
        /// gRPC's `grpc-timeout`, which the gateway sets itself on a call it caps.
        static let grpcTimeout = Lists(rawValue: 1 << 10)
    }

    private struct Entry: Sendable {
        var offset: Int32
        var flags: UInt32
    }

    /// Every name's bytes (lowercase), one after another.
    private let bytes: ContiguousArray<UInt8>
    private let entries: ContiguousArray<Entry>
    /// Entries whose name has length n and first byte b are
    /// entries[bucket[key(n, b)] ..< bucket[key(n, b) + 1]]: most fields find theirs empty.
    private let bucket: ContiguousArray<Int32>
    private let maxLength: Int

    @inline(__always)
    private static func key(_ length: Int, _ first: UInt8) -> Int { length << 5 | Int(first & 31) }

    /// `names`: each name (any case) with the lists it is on; a name given twice is on both.
    init(_ names: [(name: String, lists: Lists)]) {
        var merged: [[UInt8]: UInt32] = [:]
        for (name, lists) in names where !name.isEmpty {
            merged[Array(name.lowercased().utf8), default: 0] |= lists.rawValue
        }
        let sorted = merged.map { (key: Self.key($0.key.count, $0.key[0]), name: $0.key, flags: $0.value) }
            .sorted { $0.key != $1.key ? $0.key < $1.key : $0.name.lexicographicallyPrecedes($1.name) }
        maxLength = sorted.map(\.name.count).max() ?? 0
        let keys = Self.key(maxLength + 1, 0)
        var bytes: ContiguousArray<UInt8> = []
        var entries: ContiguousArray<Entry> = []
        var bucket: ContiguousArray<Int32> = []
        bytes.reserveCapacity(sorted.reduce(0) { $0 + $1.name.count })
        entries.reserveCapacity(sorted.count)
        bucket.reserveCapacity(keys + 1)
        var next = 0
        for k in 0...keys {
            bucket.append(Int32(next))
            while next < sorted.count && sorted[next].key == k {
                entries.append(Entry(offset: Int32(bytes.count), flags: sorted[next].flags))
                bytes.append(contentsOf: sorted[next].name)
                next += 1
            }
        }
        self.bytes = bytes
        self.entries = entries
        self.bucket = bucket
    }

    /// The lists `name` is on (empty if none).
    func lists(_ name: Span<UInt8>) -> Lists {
        let n = name.count
        guard n > 0, n <= maxLength else { return [] }
        let k = Self.key(n, HTTP1Fields.lower(name[0]))
        let bucket = self.bucket.span
        var i = Int(bucket[k])
        let end = Int(bucket[k + 1])
        let entries = self.entries.span
        let bytes = self.bytes.span
        while i < end {
            let candidate = bytes.extracting(Int(entries[i].offset)..<Int(entries[i].offset) + n)
            var k = 0
            while k < n && HTTP1Fields.lower(name[k]) == candidate[k] { k += 1 }
            if k == n { return Lists(rawValue: entries[i].flags) }
            i += 1
        }
        return []
    }
}
