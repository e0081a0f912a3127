internal import CNghttp2

/// A request as an HTTP/2 header list (RFC 9113 §8.3.1): `:method`, `:scheme`,
/// `:authority` (from the Host field the gateway set), `:path`, then the fields in order,
/// names in lowercase, without what HTTP/2 forbids or the call frames itself: the
/// connection-specific fields (§8.2.2: Connection, Keep-Alive, Proxy-Connection,
/// Transfer-Encoding, Upgrade; TE but for `trailers`), Host (now `:authority`),
/// Content-Length (the call's own, from the body) and Expect. `te: trailers` goes when the
/// client asked for it: gRPC servers look for it. One array holds the bytes; `withList`
/// lends nghttp2 the list for one `nghttp2_submit_request`, which copies it.
struct UpstreamH2RequestFields {
    private var list = HTTP2HeaderList(capacity: 512)

    init(_ request: UpstreamCall.Request, tls: Bool) {
        var authority: [UInt8]?
        var trailers = false
        add(":method", Array(request.method.rawValue.utf8))
        add(":scheme", Array((tls ? "https" : "http").utf8))
        // The fields are walked inside the closures that lend their bytes.
        request.fields.forEachFieldBuffer { name, value in
            if Self.classify(name) == .host { authority = Array(value) }
        }
        add(":authority", authority ?? [])
        add(":path", Array(request.target.utf8))
        if let forwarded = request.forwarded {
            // The client's own TE was dropped as hop-by-hop; it still says what it accepts.
            forwarded.fields.forEachFieldBuffer { name, value in
                if Self.classify(name) == .te, Self.namesTrailers(value) { trailers = true }
            }
            forwarded.forEachField { _, name, value in
                if Self.classify(name) == .other { add(name: name, value: value) }
            }
        }
        request.fields.forEachFieldBuffer { name, value in
            if Self.classify(name) == .other { add(name: name, value: value) }
        }
        if trailers { add("te", Array("trailers".utf8)) }
        if case .length(let n)? = request.body?.framing { add("content-length", Array(String(n).utf8)) }
    }

    /// The fields in order, as "name: value" strings (tests).
    var pairs: [(name: String, value: String)] { list.pairs }

    mutating func withList<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R { list.withList(body) }

    private mutating func add(_ name: StaticString, _ value: [UInt8]) {
        name.withUTF8Buffer { list.add(name: $0, value: value) }
    }

    private mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        list.add(name: name, value: value, lowercasing: true)
    }

    private enum Kind { case host, te, dropped, other }

    private static let host = Array("host".utf8)
    private static let te = Array("te".utf8)
    private static let dropped: [[UInt8]] = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length", "expect",
        "http2-settings"
    ].map { Array($0.utf8) }

    private static func classify(_ name: UnsafeBufferPointer<UInt8>) -> Kind {
        if HTTP2HeaderList.lowerEquals(name, host) { return .host }
        if HTTP2HeaderList.lowerEquals(name, te) { return .te }
        for d in dropped where HTTP2HeaderList.lowerEquals(name, d) { return .dropped }
        return .other
    }

    /// A TE field whose list has `trailers` (RFC 9110 §10.1.4).
    private static func namesTrailers(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        for member in value.split(separator: UInt8(ascii: ",")) {
            let token = member.prefix { $0 != UInt8(ascii: ";") }.filter { $0 != 0x20 && $0 != 0x09 }
            if token.map(HTTP1Fields.lower) == Array("trailers".utf8) { return true }
        }
        return false
    }
}
