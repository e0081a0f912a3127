import Testing

@testable import Reactor

/// The HTTP/2 request header block as the gateway sees it, the response head as an HTTP/2
/// header list, and which protocol a plain connection's first bytes choose; no sockets
/// (the wire is tested end to end in IntegrationTests/h2/test_http2*.py).
@Suite("HTTP/2: header blocks in and out")
struct HTTP2HeadersTests {
    static func block(_ pairs: [(String, String)], limits: HTTP1Limits = HTTP1Limits()) -> HTTP2RequestHeaders {
        var headers = HTTP2RequestHeaders(limits: limits)
        for (name, value) in pairs {
            Array(name.utf8).withUnsafeBufferPointer { n in
                Array(value.utf8).withUnsafeBufferPointer { v in headers.add(name: n, value: v) }
            }
        }
        return headers
    }

    static let request = [(":method", "GET"), (":scheme", "https"), (":authority", "api.example"), (":path", "/a?b=1")]

    @Test func pseudoHeadersBecomeTheHead() throws {
        let head = try Self.block(Self.request + [("accept", "*/*")]).head().get()
        #expect(head.methodName == "GET" && head.method == .GET)
        #expect(head.target == "/a?b=1")
        #expect(head.version == (2, 0))
        // RFC 9113 §8.3.1: :authority is the Host the gateway routes and forwards on.
        #expect(head.fields.first("host") == "api.example")
        #expect(head.fields.first("accept") == "*/*")
        #expect(!head.fields.contains(":path") && !head.fields.contains(":method"))
        #expect(!head.listsConnectionOptions)
    }

    @Test func splitCookiesAreJoined() throws {
        let head = try Self.block(Self.request + [("cookie", "a=1"), ("x", "y"), ("cookie", "b=2")]).head().get()
        // RFC 9113 §8.2.3: one field, crumbs joined with "; ", for an HTTP/1.1 upstream.
        #expect(head.fields.values("cookie") == ["a=1; b=2"])
    }

    @Test func hostMustNameTheSameAuthority() throws {
        let same = try Self.block(Self.request + [("host", "API.example")]).head().get()
        #expect(same.fields.values("host") == ["API.example"])
        #expect(Self.block(Self.request + [("host", "evil.example")]).head().failure == .hostMismatch)
        let hostOnly = try Self.block([(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "h")]).head()
            .get()
        #expect(hostOnly.fields.values("host") == ["h"])
        #expect(
            Self.block([(":method", "GET"), (":scheme", "http"), (":path", "/")]).head().failure == .missingAuthority)
    }

    @Test func onlyTheContinueExpectation() throws {
        #expect(try Self.block(Self.request + [("expect", "100-continue")]).head().get().fields.contains("expect"))
        let refused = Self.block(Self.request + [("expect", "teapot")]).head()
        #expect(refused.failure == .unsupportedExpectation && refused.failure?.status == 417)
    }

    @Test func theHTTP1BoundsHold() {
        let limits = HTTP1Limits(maxHeaderCount: 10, maxHeaderBytes: 200)
        let many = Self.block(Self.request + (0..<7).map { ("x-\($0)", "v") }, limits: limits)
        #expect(many.head().failure == .tooLarge && many.head().failure?.status == 431)
        let big = Self.block(Self.request + [("x-big", String(repeating: "b", count: 200))], limits: limits)
        #expect(big.head().failure == .tooLarge)
        let fits = Self.block(Self.request + (0..<6).map { ("x-\($0)", "v") }, limits: limits)
        #expect(fits.head().failure == nil)
    }

    @Test func connectHasTheAuthorityAsTarget() throws {
        let head = try Self.block([(":method", "CONNECT"), (":authority", "db:5432")]).head().get()
        #expect(head.methodName == "CONNECT" && head.target == "db:5432")
    }

    @Test func responseFieldsAreLowercaseWithoutConnectionSpecificOnes() {
        var fields = HTTP1Fields()
        fields.append("Content-Type", "application/json")
        fields.append("Connection", "close")
        fields.append("Keep-Alive", "timeout=5")
        fields.append("Transfer-Encoding", "chunked")
        fields.append("Upgrade", "h2c")
        fields.append("Content-Length", "999")
        fields.append("X-Request-Id", "r1")
        let date = Array("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8)
        let list = HTTP2ResponseFields(HTTPResponseHead(status: 201, fields: fields), contentLength: 12, date: date)
        #expect(list.pairs.map(\.name) == [":status", "content-type", "x-request-id", "date", "content-length"])
        #expect(list.pairs.map(\.value) == ["201", "application/json", "r1", "Sun, 06 Nov 1994 08:49:37 GMT", "12"])
    }

    @Test func aProxiedDateIsKeptAndNoLengthWhenUnknown() {
        var fields = HTTP1Fields()
        fields.append("date", "Mon, 07 Nov 1994 00:00:00 GMT")
        let head = HTTPResponseHead(status: 200, fields: fields, lastField: ("X-Request-Id", "r2"))
        let list = HTTP2ResponseFields(head, contentLength: nil, date: Array("Date: now\r\n".utf8))
        #expect(list.pairs.map(\.name) == [":status", "date", "x-request-id"])
        #expect(list.pairs[1].value == "Mon, 07 Nov 1994 00:00:00 GMT")
    }

    @Test func aPlainConnectionChoosesByItsFirstBytes() {
        func choose(_ text: String) -> ProtocolSelector.Choice {
            Array(text.utf8).withUnsafeBytes { ProtocolSelector.choose($0) }
        }
        #expect(choose("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == .http2)
        #expect(choose("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\u{12}\u{4}") == .http2)
        // The preface's first line decides: nghttp2 refuses a wrong rest (RFC 9113 §3.4).
        #expect(choose("PRI * HTTP/2.0\r\n") == .http2)
        #expect(choose("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n") == .http2)
        #expect(choose("PRI * HTTP/2.0\r") == .undecided)
        #expect(choose("PRI * HTTP/2") == .undecided)
        #expect(choose("P") == .undecided)
        #expect(choose("GET / HTTP/1.1\r\n") == .http1)
        #expect(choose("PRI * HTTP/1.1\r\n") == .http1)
        #expect(choose("POST") == .http1)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let f) = self { f } else { nil }
    }
}
