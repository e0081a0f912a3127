import Reactor

/// Field names looked up by their bytes, ASCII-case-insensitively, each with the lists it
/// is on as bits: one lookup per field where the request path compared every field with
/// every name of several lists. Names are bucketed by length, so a field is compared with
/// the few names of its own length only.
///
/// Immutable once built, and kept in memory of its own (raw, freed with the table) so that
/// a lookup reads plain bytes: no reference counting on the request path.
final class HeaderNameTable: @unchecked Sendable {
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
    }

    private struct Entry {
        var offset: Int32
        var flags: UInt32
    }

    private let bytes: UnsafeMutablePointer<UInt8>
    private let entries: UnsafeMutablePointer<Entry>
    /// Entries of length n are entries[bucket[n] ..< bucket[n + 1]].
    private let bucket: UnsafeMutablePointer<Int32>
    private let maxLength: Int

    /// `names`: each name (any case) with the lists it is on; a name given twice is on both.
    init(_ names: [(name: String, lists: Lists)]) {
        var merged: [[UInt8]: UInt32] = [:]
        for (name, lists) in names { merged[Array(name.lowercased().utf8), default: 0] |= lists.rawValue }
        let sorted = merged.sorted {
            $0.key.count != $1.key.count ? $0.key.count < $1.key.count : $0.key.lexicographicallyPrecedes($1.key)
        }
        maxLength = sorted.last?.key.count ?? 0
        let byteCount = sorted.reduce(0) { $0 + $1.key.count }
        bytes = .allocate(capacity: max(byteCount, 1))
        entries = .allocate(capacity: max(sorted.count, 1))
        bucket = .allocate(capacity: maxLength + 2)
        var offset = 0
        var length = 0
        bucket[0] = 0
        for (i, (name, flags)) in sorted.enumerated() {
            while length < name.count {
                length += 1
                bucket[length] = Int32(i)
            }
            for (k, b) in name.enumerated() { bytes[offset + k] = b }
            entries[i] = Entry(offset: Int32(offset), flags: flags)
            offset += name.count
        }
        while length <= maxLength {
            length += 1
            bucket[length] = Int32(sorted.count)
        }
    }

    deinit {
        bytes.deallocate()
        entries.deallocate()
        bucket.deallocate()
    }

    /// The lists `name` is on (empty if none).
    func lists(_ name: UnsafeBufferPointer<UInt8>) -> Lists {
        let n = name.count
        guard n > 0, n <= maxLength, let base = name.baseAddress else { return [] }
        var i = Int(bucket[n])
        let end = Int(bucket[n + 1])
        while i < end {
            let candidate = bytes + Int(entries[i].offset)
            var k = 0
            while k < n && HTTP1Fields.lower(base[k]) == candidate[k] { k += 1 }
            if k == n { return Lists(rawValue: entries[i].flags) }
            i += 1
        }
        return []
    }
}
