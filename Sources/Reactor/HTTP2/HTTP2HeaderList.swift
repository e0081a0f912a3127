internal import CNghttp2

/// A header list on its way into an `nghttp2_submit_*` call: the bytes of every name and
/// value in one array, names lowercased where asked (RFC 9113 §8.2: uppercase is malformed).
/// `withList` lends nghttp2 the `nghttp2_nv` list for one call, which copies it. The
/// response heads and trailers of the HTTP/2 server (`HTTP2ResponseFields`) and the requests
/// to HTTP/2 upstreams (`UpstreamH2RequestFields`) are built on it.
struct HTTP2HeaderList {
    private var storage: [UInt8] = []
    /// Offsets and lengths of each name and value in `storage`.
    private var spans: [(name: Int, nameCount: Int, value: Int, valueCount: Int)] = []

    init(capacity: Int) { storage.reserveCapacity(capacity) }

    /// The fields in order, as "name: value" strings (tests).
    var pairs: [(name: String, value: String)] {
        spans.map {
            (
                String(decoding: storage[$0.name..<($0.name + $0.nameCount)], as: UTF8.self),
                String(decoding: storage[$0.value..<($0.value + $0.valueCount)], as: UTF8.self)
            )
        }
    }

    mutating func add<N: Collection<UInt8>, V: Collection<UInt8>>(name: N, value: V, lowercasing: Bool = false) {
        let nameAt = storage.count
        if lowercasing {
            for b in name { storage.append(HTTP1Fields.lower(b)) }
        } else {
            storage += name
        }
        let valueAt = storage.count
        storage += value
        spans.append((nameAt, valueAt - nameAt, valueAt, storage.count - valueAt))
    }

    /// Calls `body` with the list as nghttp2 takes it, valid for the call only.
    mutating func withList<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        let spans = self.spans
        return storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            var list = spans.map {
                nghttp2_nv(
                    name: base + $0.name, value: base + $0.value, namelen: $0.nameCount, valuelen: $0.valueCount,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return list.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }

    /// Whether `name` is `lower` in any case (`lower` is lowercase ASCII).
    static func lowerEquals(_ name: UnsafeBufferPointer<UInt8>, _ lower: [UInt8]) -> Bool {
        guard name.count == lower.count else { return false }
        for i in 0..<name.count where HTTP1Fields.lower(name[i]) != lower[i] { return false }
        return true
    }
}
