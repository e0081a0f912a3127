import Testing

@testable import Reactor

/// gRPC calls told by their content-type, the status a refusal is told as, `grpc-message`'s
/// percent-encoding, and the trailers-only head on HTTP/2; no sockets (the wire, with a
/// real gRPC client, is IntegrationTests/h2/test_grpc_refusals.py).
@Suite("gRPC refusals: detection, status mapping, trailers-only")
struct GRPCRefusalTests {
    @Test(arguments: [
        ("application/grpc", GRPCCall.grpc),
        ("application/grpc+proto", .grpc),
        ("application/grpc+json", .grpc),
        ("APPLICATION/GRPC", .grpc),
        ("Application/gRPC+Proto", .grpc),
        ("application/grpc; charset=utf-8", .grpc),
        ("application/grpc;x=1", .grpc),
        (" application/grpc ", .grpc),
        ("application/grpc-web", .grpcWeb(text: false, format: nil)),
        ("application/grpc-web+proto", .grpcWeb(text: false, format: "proto")),
        ("application/grpc-web-text", .grpcWeb(text: true, format: nil)),
        ("Application/GRPC-Web-Text+PROTO", .grpcWeb(text: true, format: "proto")),
        ("application/grpc-web-text+proto; charset=x", .grpcWeb(text: true, format: "proto"))
    ])
    func grpcContentTypes(contentType: String, call: GRPCCall) {
        #expect(GRPCCall(contentType: contentType) == call)
    }

    /// Near misses an attacker (or a confused client) might send: none is a gRPC call, so
    /// none changes the answer's form.
    @Test(arguments: [
        "application/grpcx", "application/grpc-webfoo", "application/grpc-web-textx", "application/grpc+",
        "application/grpc+proto+x", "application/grpc+pr\"oto", "application/grpc+pro to", "application/grpc-",
        "application/grpc/x", "application/json", "text/grpc", "application/ grpc", "xapplication/grpc",
        "application/grp", "", ";application/grpc", "application/grpc\u{0}", "application/grpc-webtext"
    ])
    func notGRPC(contentType: String) {
        #expect(GRPCCall(contentType: contentType) == nil)
    }

    @Test func theFirstContentTypeOfAHeadDecides() {
        #expect(GRPCCall(HTTP1Fields([("Content-Type", "application/grpc")])) == .grpc)
        #expect(GRPCCall(HTTP1Fields([("Accept", "application/grpc")])) == nil)
        #expect(GRPCCall(HTTP1Fields([])) == nil)
        #expect(
            GRPCCall(HTTP1Fields([("content-type", "application/json"), ("Content-Type", "application/grpc")])) == nil)
        #expect(
            GRPCCall(HTTP1Fields([("Content-Type", "application/grpc-web"), ("content-type", "text/plain")]))
                == .grpcWeb(text: false, format: nil))
    }

    /// A head's type is first turned away on its bytes (`startsAsCall`): that shortcut
    /// decides as the full reading of the type does, for every call and near miss above.
    @Test(arguments: [
        "application/grpc", "application/grpc+proto", "APPLICATION/GRPC", "Application/gRPC+Proto",
        "application/grpc; charset=utf-8", " application/grpc ", "\tapplication/grpc", "application/grpc-web",
        "Application/GRPC-Web-Text+PROTO", "application/grpcx", "application/grpc-webfoo", "application/grpc+",
        "application/json", "text/grpc", "application/ grpc", "xapplication/grpc", "application/grp", "",
        ";application/grpc", "application/grpc\u{0}", "application/grpc-webtext"
    ])
    func aHeadsTypeDecidesAsTheTypeAlone(contentType: String) {
        #expect(GRPCCall(HTTP1Fields([("Content-Type", contentType)])) == GRPCCall(contentType: contentType))
    }

    @Test func responseContentTypes() {
        #expect(GRPCCall.grpc.responseContentType == "application/grpc")
        #expect(GRPCCall(contentType: "application/grpc+json")?.responseContentType == "application/grpc")
        #expect(GRPCCall(contentType: "application/grpc-web")?.responseContentType == "application/grpc-web")
        #expect(
            GRPCCall(contentType: "Application/GRPC-Web-Text+Proto")?.responseContentType
                == "application/grpc-web-text+proto")
    }

    @Test(arguments: [
        (400, GRPCStatus.internal), (401, .unauthenticated), (403, .permissionDenied), (404, .unimplemented),
        (405, .unknown), (408, .unknown), (413, .resourceExhausted), (417, .unknown), (429, .resourceExhausted),
        (431, .resourceExhausted), (500, .unknown), (502, .unavailable), (503, .unavailable),
        (504, .deadlineExceeded), (505, .unknown)
    ])
    func statusMapping(http: Int, grpc: GRPCStatus) {
        #expect(GRPCStatus(refusal: http) == grpc)
    }

    @Test func theCodesAreTheSpecsNumbers() {
        #expect(GRPCStatus.unauthenticated.rawValue == 16 && GRPCStatus.permissionDenied.rawValue == 7)
        #expect(GRPCStatus.unimplemented.rawValue == 12 && GRPCStatus.unavailable.rawValue == 14)
        #expect(GRPCStatus.deadlineExceeded.rawValue == 4 && GRPCStatus.internal.rawValue == 13)
        #expect(GRPCStatus.resourceExhausted.rawValue == 8 && GRPCStatus.unknown.rawValue == 2)
    }

    @Test(arguments: [
        ("the token has expired", "the token has expired"),
        ("100% sure", "100%25 sure"),
        ("a\u{7F}b", "a%7Fb"),
        ("line\r\nbreak\t", "line%0D%0Abreak%09"),
        ("caf\u{E9}", "caf%C3%A9"),
        ("\u{1F512} locked", "%F0%9F%94%92 locked"),
        (" ~!\"", " ~!\"")
    ])
    func percentEncoding(message: String, encoded: String) {
        #expect(GRPCTrailersOnly.percentEncoded(message) == encoded)
    }

    @Test func trailersOnlyFields() {
        let fields = GRPCTrailersOnly.fields(.grpc, refusal: 401, message: "no token: 100%")
        #expect(fields.map(\.0) == ["content-type", "grpc-status", "grpc-message"])
        #expect(fields.map(\.1) == ["application/grpc", "16", "no token: 100%25"])
        #expect(GRPCTrailersOnly.fields(.grpc, refusal: 404, message: "").map(\.0) == ["content-type", "grpc-status"])
    }

    /// On HTTP/2 the answer is its HEADERS frame alone: no content-length (a body-less
    /// `sendResponse` submits no data provider, so nghttp2 sets END_STREAM on HEADERS).
    @Test func trailersOnlyHeadOnHTTP2() {
        var head = HTTPResponseHead(status: 200)
        for (name, value) in GRPCTrailersOnly.fields(.grpc, refusal: 401, message: "authentication is required") {
            head.fields.append(name, value)
        }
        head.fields.append("WWW-Authenticate", "Bearer realm=\"api\"")
        head.fields.append("DPoP-Nonce", "n-1")
        head.trailersOnly = true
        let length = HTTP2Stream.announcedLength(head, body: [], noBody: false)
        #expect(length == nil)
        let fields = HTTP2ResponseFields(head, contentLength: length, date: [])
        #expect(
            fields.pairs.map { "\($0.name): \($0.value)" } == [
                ":status: 200", "content-type: application/grpc", "grpc-status: 16",
                "grpc-message: authentication is required", "www-authenticate: Bearer realm=\"api\"",
                "dpop-nonce: n-1"
            ])
        // The same empty body in a plain answer keeps its content-length: 0.
        head.trailersOnly = false
        #expect(HTTP2Stream.announcedLength(head, body: [], noBody: false) == 0)
    }

    /// The engine's own refusals (431, 400, 417) see the content-type read before the block
    /// was refused.
    @Test func theEngineSeesTheCallOfARefusedBlock() {
        let limits = HTTP1Limits(maxHeaderCount: 8, maxHeaderBytes: 400)
        let request = [(":method", "POST"), (":scheme", "http"), (":authority", "a"), (":path", "/p.S/M")]
        let big = HTTP2HeadersTests.block(
            request + [("content-type", "application/grpc")] + (0..<8).map { ("x-\($0)", "v") }, limits: limits)
        #expect(big.head().refusal == .tooLarge && big.grpcCall == .grpc)
        let plain = HTTP2HeadersTests.block(request + [("expect", "teapot")])
        #expect(plain.head().refusal == .unsupportedExpectation && plain.grpcCall == nil)
    }
}

extension Result where Failure == HTTP2RequestHeaders.Refusal {
    fileprivate var refusal: Failure? {
        if case .failure(let f) = self { f } else { nil }
    }
}
