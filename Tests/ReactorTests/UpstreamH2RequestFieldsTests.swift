import Testing

@testable import Reactor

/// A request as the header list an HTTP/2 upstream gets (RFC 9113 §8.3.1); no sockets (the
/// wire is tested end to end in IntegrationTests/h2/test_grpc.py).
@Suite("HTTP/2 upstreams: the request's header list")
struct UpstreamH2RequestFieldsTests {
    static func list(
        target: String = "/pkg.Svc/Call?x=1", client: [(String, String)], own: [(String, String)],
        tls: Bool = false
    ) -> [(name: String, value: String)] {
        let forwarded = HTTP1ForwardedFields(HTTP1Fields(client)) { name in
            // As the gateway's rules do: hop-by-hop fields are not passed on.
            let lower = String(decoding: name.withUnsafeBufferPointer { Array($0) }, as: UTF8.self).lowercased()
            return !["connection", "te", "keep-alive", "upgrade"].contains(lower)
        }
        let request = UpstreamCall.Request(
            method: .POST, target: target, fields: HTTP1Fields(own), forwarded: forwarded, body: nil)
        return UpstreamH2RequestFields(request, tls: tls).pairs
    }

    @Test func pseudoHeadersFirstFromTheRequestAndItsHost() {
        let pairs = Self.list(client: [("Accept", "*/*")], own: [("Host", "orders.internal:8443")], tls: true)
        #expect(pairs.prefix(4).map(\.name) == [":method", ":scheme", ":authority", ":path"])
        #expect(pairs[0].value == "POST" && pairs[1].value == "https")
        #expect(pairs[2].value == "orders.internal:8443")
        #expect(pairs[3].value == "/pkg.Svc/Call?x=1")
        // Host became :authority and is not sent again.
        #expect(!pairs.contains { $0.name == "host" })
        #expect(pairs.contains { $0.name == "accept" && $0.value == "*/*" })
    }

    @Test func namesAreLowercase() {
        let pairs = Self.list(client: [("X-Client-Thing", "A")], own: [("Host", "h"), ("X-User-Id", "alice")])
        #expect(pairs.contains { $0.name == "x-client-thing" && $0.value == "A" })
        #expect(pairs.contains { $0.name == "x-user-id" && $0.value == "alice" })
        #expect(pairs.allSatisfy { $0.name == $0.name.lowercased() })
    }

    @Test func connectionSpecificFieldsNeverGo() {
        // RFC 9113 §8.2.2: a message with any of these is malformed; the call frames the body
        // itself, and Expect has no HTTP/2 meaning here.
        let pairs = Self.list(
            client: [
                ("Transfer-Encoding", "chunked"), ("Content-Length", "99"), ("Proxy-Connection", "x"),
                ("Expect", "100-continue"), ("HTTP2-Settings", "AAA"), ("Keep-Alive", "5"), ("Upgrade", "h2c")
            ],
            own: [("Host", "h")])
        let names = Set(pairs.map(\.name))
        for banned in [
            "transfer-encoding", "content-length", "proxy-connection", "expect", "http2-settings", "keep-alive",
            "upgrade", "connection"
        ] {
            #expect(!names.contains(banned), "\(banned) sent")
        }
    }

    @Test func teGoesOnlyAsTrailers() {
        // gRPC servers look for `te: trailers`; any other TE is hop-by-hop and never sent.
        let grpc = Self.list(client: [("TE", "trailers")], own: [("Host", "h")])
        #expect(grpc.filter { $0.name == "te" }.map(\.value) == ["trailers"])
        let listed = Self.list(client: [("TE", "gzip;q=0.5, Trailers")], own: [("Host", "h")])
        #expect(listed.filter { $0.name == "te" }.map(\.value) == ["trailers"])
        let other = Self.list(client: [("TE", "gzip")], own: [("Host", "h")])
        #expect(!other.contains { $0.name == "te" })
        let lookalike = Self.list(client: [("TE", "trailersx")], own: [("Host", "h")])
        #expect(!lookalike.contains { $0.name == "te" })
    }

    @Test func contentLengthIsTheBodys() {
        let request = UpstreamCall.Request(
            method: .PUT, target: "/", fields: HTTP1Fields([("Host", "h"), ("Content-Length", "7")]),
            body: BufferedRequestBody(Array("abc".utf8)))
        let pairs = UpstreamH2RequestFields(request, tls: false).pairs
        #expect(pairs.filter { $0.name == "content-length" }.map(\.value) == ["3"])
    }
}
