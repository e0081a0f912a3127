internal import CNghttp2

/// A response head as an HTTP/2 header list (RFC 9113 §8.3.2): `:status` first, then the
/// fields the head passes on and its own, names in lowercase (RFC 9113 §8.2: uppercase is
/// malformed), without the connection-specific fields HTTP/2 forbids (§8.2.2: Connection,
/// Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade) and with the engine's own
/// `content-length` when the body's length is known, and a `date` unless the head has one
/// (a proxied origin's). The bytes live in one array; `withList` lends nghttp2 the list
/// for one `nghttp2_submit_*` call, which copies it.
struct HTTP2ResponseFields {
    private var list = HTTP2HeaderList(capacity: 256)

    init(_ head: HTTPResponseHead, contentLength: UInt64?, date: [UInt8]) {
        add(name: Array(":status".utf8), value: Array(String(head.status).utf8))
        var hasDate = false
        func each(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
            switch Self.classify(name) {
            case .dropped: return
            case .date: hasDate = true
            case .other: break
            }
            add(name: name, value: value, lowercasing: true)
        }
        head.forwarded?.forEachField { _, name, value in each(name, value) }
        head.fields.forEachFieldBuffer(each)
        if let (name, value) = head.lastField {
            var value = value
            name.withUTF8Buffer { name in value.withUTF8 { each(name, $0) } }
        }
        if !hasDate, date.count > 8 {
            // The cache holds the HTTP/1.1 line "Date: …\r\n".
            add(name: Array("date".utf8), value: Array(date[6..<(date.count - 2)]))
        }
        if let contentLength { add(name: Array("content-length".utf8), value: Array(String(contentLength).utf8)) }
    }

    /// A trailer section: the fields alone, lowercased, the connection-specific ones left
    /// out (RFC 9113 §8.1: no pseudo-header in trailers).
    init(trailers: HTTP1Fields) {
        trailers.forEachFieldBuffer { name, value in
            if Self.classify(name) != .dropped { add(name: name, value: value, lowercasing: true) }
        }
    }

    /// The fields in order, as "name: value" strings (tests).
    var pairs: [(name: String, value: String)] { list.pairs }

    /// Calls `body` with the list as nghttp2 takes it, valid for the call only.
    mutating func withList<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R { list.withList(body) }

    private mutating func add<N: Collection<UInt8>, V: Collection<UInt8>>(
        name: N, value: V, lowercasing: Bool = false
    ) {
        list.add(name: name, value: value, lowercasing: lowercasing)
    }

    private enum Kind { case dropped, date, other }

    private static let date = Array("date".utf8)
    private static let connectionSpecific: [[UInt8]] = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length"
    ].map { Array($0.utf8) }

    private static func classify(_ name: UnsafeBufferPointer<UInt8>) -> Kind {
        if HTTP2HeaderList.lowerEquals(name, date) { return .date }
        for dropped in connectionSpecific where HTTP2HeaderList.lowerEquals(name, dropped) { return .dropped }
        return .other
    }
}
