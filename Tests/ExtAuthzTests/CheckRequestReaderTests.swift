import Foundation
import Testing

@testable import ExtAuthz

/// A CheckRequest as Envoy's own generated messages write it (PyPI `xds-protos`, with the
/// fields proto/ leaves out: timestamps, metadata, TLS session, labels) reads into the
/// attributes the gateway judges; every request a client could not have sent is refused.
@Suite("ext_authz: reading a CheckRequest")
struct CheckRequestReaderTests {
    static let limits = CheckRequestReader.Limits(maxFields: 8, maxFieldBytes: 512)

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    /// xds-protos: source 203.0.113.7:51234 with a principal, a destination, the request's
    /// time, POST https api.example.com /v1/items?x=1 with id, size and protocol, the
    /// `headers` map (pseudo-headers included), context extensions, filter metadata, SNI.
    static let envoyRequest = bytes(
        "0af4020a420a130a11120b3230332e302e3131332e3718a29003222b7370696666653a2f2f636c75737465722e6c6f63616c2f6e"
            + "732f64656661756c742f73612f636c69656e7412110a0f0a0d120831302e302e302e3218903f22cb010a060880e79ac906"
            + "12c0010a057265712d311204504f53541a160a053a70617468120d2f76312f6974656d733f783d311a1b0a0d617574686f"
            + "72697a6174696f6e120a426561726572206162631a110a0464706f70120965794a2e70726f6f661a080a03782d62120132"
            + "1a0f0a073a6d6574686f641204504f53541a1d0a0a3a617574686f72697479120f6170692e6578616d706c652e636f6d22"
            + "0d2f76312f6974656d733f783d312a0f6170692e6578616d706c652e636f6d32056874747073480c5206485454502f3252"
            + "0c0a05726f75746512036170695a2c0a2a0a1c656e766f792e66696c746572732e687474702e6a77745f617574686e120a"
            + "0a080a016b12031a017662110a0f6170692e6578616d706c652e636f6d")

    /// xds-protos: GET http h / with `header_map` (encode_raw_headers): two Cookie fields,
    /// each in `raw_value`.
    static let rawHeaders = bytes(
        "0a3522331231120347455422012f2a01683204687474706a1e0a0d0a06636f6f6b69651a03613d310a0d0a06636f6f6b69651a0362"
            + "3d32")

    @Test func envoysRequestReadsWhole() throws {
        let a = try CheckRequestReader.read(Self.envoyRequest, limits: Self.limits).get()
        #expect(a.method == "POST" && a.scheme == "https" && a.host == "api.example.com")
        #expect(a.path == "/v1/items?x=1")
        #expect(a.sourceAddress == "203.0.113.7" && a.requestID == "req-1")
        // The map, sorted; the pseudo-headers left out (they are the method, host and path).
        #expect(
            a.fields == [
                .init("authorization", "Bearer abc"), .init("dpop", "eyJ.proof"), .init("x-b", "2")
            ])
    }

    /// xds-protos: POST http h /mcp with `body` (text), with `raw_body` (bytes, not UTF-8),
    /// and with both.
    static let textBody = bytes("0a222220121e1204504f535422042f6d63702a01683204687474705a077b2261223a317d")
    static let rawBody = bytes("0a232221121f1204504f535422042f6d63702a016832046874747062087b2262223a327dff")
    static let bothBodies = bytes("0a1f221d121b1204504f535422042f6d63702a01683204687474705a0178620179")
    /// `body` holding a byte that is not UTF-8 (as an older Envoy wrote it), and `raw_body`
    /// shorter than the request's `size` (100) or as long as it (7).
    static let textBodyNotUTF8 = bytes("0a222220121e1204504f535422042f6d63702a01683204687474705a077b2261223a31ff")
    static let cutBody = bytes("0a24222212201204504f535422042f6d63702a0168320468747470486462077b2263223a337d")
    static let wholeBody = bytes("0a24222212201204504f535422042f6d63702a0168320468747470480762077b2263223a337d")

    /// A client's byte in the body never makes the message unreadable (the call refused, which
    /// `failure_mode_allow` would let through): the body is read as bytes, marked as text.
    @Test func aBodyThatIsNotUTF8IsReadAndACutOneIsMarked() throws {
        let roomy = CheckRequestReader.Limits(maxFields: 8, maxFieldBytes: 512, maxBodyBytes: 64)
        let text = try CheckRequestReader.read(Self.textBodyNotUTF8, limits: roomy).get()
        #expect(text.body?.last == 0xff && text.bodyIsText)
        // Without MCP routes it is not even kept, and the request reads as before.
        #expect(try CheckRequestReader.read(Self.textBodyNotUTF8, limits: Self.limits).get().method == "POST")
        #expect(try CheckRequestReader.read(Self.cutBody, limits: roomy).get().bodyCut)
        #expect(try CheckRequestReader.read(Self.wholeBody, limits: roomy).get().bodyCut == false)
    }

    /// Envoy's `with_request_body`: the body is read as it came, up to the limit the MCP
    /// routes set; two bodies to choose from are refused, one past the limit is not kept.
    @Test func aBodyIsReadWithinItsLimit() throws {
        let roomy = CheckRequestReader.Limits(maxFields: 8, maxFieldBytes: 512, maxBodyBytes: 64)
        let text = try CheckRequestReader.read(Self.textBody, limits: roomy).get()
        #expect(text.body == Array(#"{"a":1}"#.utf8) && text.bodyIsText && !text.bodyCut)
        let raw = try CheckRequestReader.read(Self.rawBody, limits: roomy).get()
        #expect(raw.body == Array(#"{"b":2}"#.utf8) + [0xff] && !raw.bodyIsText)
        #expect(try CheckRequestReader.read(Self.envoyRequest, limits: roomy).get().body == nil)
        guard case .failure(let both) = CheckRequestReader.read(Self.bothBodies, limits: roomy) else {
            Issue.record("both body and raw_body were read")
            return
        }
        // Not a request to judge: the call itself is refused.
        #expect(both.httpStatus == nil)
        // No MCP route: no body is kept, and the request is judged as before.
        let none = try CheckRequestReader.read(Self.textBody, limits: Self.limits).get()
        #expect(none.body == nil && none.bodyPastLimit)
        let tight = CheckRequestReader.Limits(maxFields: 8, maxFieldBytes: 512, maxBodyBytes: 7)
        #expect(try CheckRequestReader.read(Self.textBody, limits: tight).get().bodyPastLimit == false)
        let past = try CheckRequestReader.read(Self.rawBody, limits: tight).get()
        #expect(past.body == nil && past.bodyPastLimit)
    }

    @Test func rawHeadersKeepRepeatedFieldsApart() throws {
        let a = try CheckRequestReader.read(Self.rawHeaders, limits: Self.limits).get()
        #expect(a.fields == [.init("cookie", "a=1"), .init("cookie", "b=2")])
        #expect(a.sourceAddress == nil && a.requestID == nil)
    }

    static func request(
        method: String = "GET", scheme: String = "https", host: String = "h", path: String = "/",
        headers: [String: String] = [:], raw: [(String, [UInt8])]? = nil, rawWithValue: Bool = false,
        source: String? = nil, id: String = ""
    ) -> [UInt8] {
        var http = Envoy_Service_Auth_V3_AttributeContext.HttpRequest()
        http.method = method
        http.scheme = scheme
        http.host = host
        http.path = path
        http.id = id
        http.headers = headers.map { key, value in
            var entry = Envoy_Service_Auth_V3_AttributeContext.HttpRequest.HeadersEntry()
            entry.key = key
            entry.value = value
            return entry
        }
        if let raw {
            http.headerMap.headers = raw.map {
                var h = Envoy_Config_Core_V3_HeaderValue()
                h.key = $0.0
                h.rawValue = Data($0.1)
                if rawWithValue { h.value = "v" }
                return h
            }
        }
        var message = Envoy_Service_Auth_V3_CheckRequest()
        message.attributes.request.http = http
        if let source {
            var socket = Envoy_Config_Core_V3_SocketAddress()
            socket.address = source
            message.attributes.source.address.socketAddress = socket
        }
        return try! message.serializedBytes()
    }

    /// The framing and routing fields of one connection say nothing of the request judged.
    @Test(arguments: [["content-length": "5"], ["transfer-encoding": "chunked"]])
    func connectionFieldsAreDropped(framing: [String: String]) throws {
        let bytes = Self.request(
            headers: [
                "te": "trailers", "connection": "close", "upgrade": "h2c", "keep-alive": "1",
                "proxy-connection": "x", "host": "H", "x-a": "1"
            ].merging(framing) { a, _ in a })
        let a = try CheckRequestReader.read(bytes, limits: .init(maxFields: 16, maxFieldBytes: 512)).get()
        #expect(a.fields == [.init("x-a", "1")])
    }

    /// RFC 9112 §6.3: both framings at once is the smuggling shape, refused as the gateway's
    /// own parser refuses it, in the `headers` map and in `header_map` alike.
    @Test func bothTransferEncodingAndContentLengthAreRefused() {
        let both = "the request has both Transfer-Encoding and Content-Length"
        #expect(Self.refusal(Self.request(headers: ["content-length": "5", "transfer-encoding": "chunked"])) == both)
        let raw = Self.request(raw: [("transfer-encoding", Array("chunked".utf8)), ("content-length", [0x35])])
        #expect(Self.refusal(raw) == both)
        if case .failure(let r) = CheckRequestReader.read(raw, limits: Self.limits) { #expect(r.httpStatus == 400) }
    }

    static func refusal(_ bytes: [UInt8]) -> String? {
        if case .failure(let r) = CheckRequestReader.read(bytes, limits: limits) { return r.reason }
        return nil
    }

    @Test func garbageAndEmptyMessagesAreRefused() {
        #expect(Self.refusal([0xFF, 0xFF, 0xFF]) == "the message is not a CheckRequest")
        #expect(Self.refusal([0x0A, 0x05, 0x01]) == "the message is not a CheckRequest")
        #expect(Self.refusal([]) == "the CheckRequest has no HTTP request attributes")
    }

    @Test(arguments: [
        (request(method: "GET /x"), "the method is not a token"),
        (request(method: ""), "the method is not a token"),
        // ExtAuthzFuzz's first finding: a colon passed as a pseudo-header name's would.
        (request(method: ":ET"), "the method is not a token"),
        (request(scheme: "ftp"), "the scheme is not http or https"),
        (request(host: ""), "the host is empty or has a control character"),
        (request(host: "a\r\nx-user: admin"), "the host is empty or has a control character"),
        (request(path: ""), "the path is empty or has a space or control character"),
        (request(path: "/a b"), "the path is empty or has a space or control character"),
        (request(path: "/a\n"), "the path is empty or has a space or control character"),
        (request(headers: ["X-User": "a"]), "a header name is not a lower-case token"),
        (request(headers: ["x user": "a"]), "a header name is not a lower-case token"),
        (request(headers: ["x-a": "1\r\nx-user: admin"]), "a header value has a control character"),
        (request(headers: ["x-a": "1\u{0}"]), "a header value has a control character"),
        (request(headers: [":path": "/\n"]), "a pseudo-header is malformed"),
        (request(headers: [":": "x"]), "a pseudo-header is malformed"),
        (request(headers: ["::path": "x"]), "a pseudo-header is malformed"),
        (
            request(headers: Dictionary(uniqueKeysWithValues: (0..<9).map { ("x-\($0)", "v") })),
            "more header fields than allowed"
        ),
        (request(headers: ["x-a": String(repeating: "v", count: 600)]), "the header fields are too large"),
        (request(path: "/" + String(repeating: "p", count: 600)), "the header fields are too large"),
        (request(headers: ["host": "evil.example"]), "a host field names another host than the request's"),
        // Two messages read as one (protobuf merges them): the map's key twice.
        (request(headers: ["x-a": "1"]) + request(headers: ["x-a": "2"]), "a key is twice in the headers map"),
        (request(source: "10.0.0.1\r\nx-user: admin"), "the source address is not an IP address"),
        (request(id: "r\r\nx-user: admin"), "the request id is too long or has a control character"),
        (request(raw: [("x-a", [0xFF, 0xFE])]), "a raw header value is not UTF-8, or comes with a value"),
        (
            request(raw: [("x-a", Array("raw".utf8))], rawWithValue: true),
            "a raw header value is not UTF-8, or comes with a value"
        ),
        (Array(repeating: 0, count: 20_000), "the message is too large")
    ])
    func aRequestNoClientCouldSendIsRefused(bytes: [UInt8], reason: String) {
        #expect(Self.refusal(bytes) == reason)
    }
}
