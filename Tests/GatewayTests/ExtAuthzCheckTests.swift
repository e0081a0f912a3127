import Foundation
import JOSE
import Testing

@testable import ExtAuthz
@testable import Gateway
@testable import Reactor

/// ext_authz over gRPC (`decision.ext_authz_grpc`) without sockets: the config, a worker's
/// answers to `Check` calls over the in-memory transport, and the header changes an allowed
/// verdict asks of Envoy (the wire, with Envoy's own messages and a real AS, is
/// IntegrationTests/decision/test_ext_authz_grpc.py).
@Suite("ext_authz over gRPC: config, Check calls, header changes")
struct ExtAuthzCheckTests {
    static let yaml = """
        listen: { address: 127.0.0.1:1, http2: true }
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        decision: { ext_authz_grpc: true }
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
            headers: { X-User: sub, X-Email: email }
          - name: web
            match: { path_prefix: /public/ }
            upstream: app
            auth: none
        """

    static func checkRequest(_ path: String, _ headers: [String: String] = [:]) -> [UInt8] {
        var m = Envoy_Service_Auth_V3_CheckRequest()
        m.attributes.request.http.method = "GET"
        m.attributes.request.http.scheme = "https"
        m.attributes.request.http.host = "api.example"
        m.attributes.request.http.path = path
        m.attributes.request.http.headers = headers.map { key, value in
            var entry = Envoy_Service_Auth_V3_AttributeContext.HttpRequest.HeadersEntry()
            entry.key = key
            entry.value = value
            return entry
        }
        m.attributes.source.address.socketAddress.address = "203.0.113.7"
        return GRPCMessage.framed(try! m.serializedBytes())
    }

    func call(
        _ w: Worker, _ body: [UInt8], peer: String = "10.1.2.3", version: (Int, Int) = (2, 0),
        contentType: String = "application/grpc"
    ) -> InMemoryTransport {
        let (ex, t) = InMemoryTransport.exchange(
            "POST", ExtAuthzService.checkPath, fields: [("Host", "tokengate:8080"), ("content-type", contentType)],
            body: body, peer: peer, version: version)
        w.handle(ex)
        return t
    }

    func response(_ t: InMemoryTransport) throws -> Envoy_Service_Auth_V3_CheckResponse {
        #expect(t.status == 200 && t.trailers.first("grpc-status") == "0")
        let message = try GRPCMessage.unary(t.body).get()
        return try Envoy_Service_Auth_V3_CheckResponse(serializedBytes: Array(message))
    }

    @Test func configNeedsAnHTTP2Listener() {
        let plain = Self.yaml.replacingOccurrences(of: "{ address: 127.0.0.1:1, http2: true }", with: "127.0.0.1:1")
        guard case .failure(let e) = ConfigParser.parse(yaml: plain, environment: [:], baseDirectory: "/", cores: 1)
        else {
            Issue.record("a config without an HTTP/2 listener was accepted")
            return
        }
        #expect(e.description.contains("decision.ext_authz_grpc") && e.description.contains("HTTP/2 listener"))
        let on = try? ConfigParser.parse(yaml: Self.yaml, environment: [:], baseDirectory: "/", cores: 1).get()
        #expect(on?.decision.extAuthzGRPC == true)
    }

    @Test func aPublicRouteIsAllowedWithTheClientsForgedIdentityRemoved() throws {
        let w = try testWorker(Self.yaml)
        let t = call(w, Self.checkRequest("/public/x", ["x-user": "admin", "accept": "*/*"]))
        let r = try response(t)
        #expect(r.status.code == 0 && r.okResponse.headers.isEmpty)
        #expect(r.okResponse.headersToRemove == ["x-user"])
    }

    @Test func aValidTokenSetsIdentityOverTheClientsCopies() throws {
        let w = try testWorker(Self.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let token = try testAccessToken(key: key, now: Int64(Date().timeIntervalSince1970))
        let t = call(
            w,
            Self.checkRequest(
                "/api/x", ["authorization": "Bearer \(token)", "x-user": "admin", "x-email": "root@evil.example"]))
        let r = try response(t)
        #expect(r.status.code == 0)
        #expect(r.okResponse.headers.map(\.header.key) == ["x-user"])
        #expect(r.okResponse.headers.first?.header.value == "alice")
        #expect(r.okResponse.headers.first?.appendAction == .overwriteIfExistsOrAdd)
        #expect(Set(r.okResponse.headersToRemove) == ["authorization", "x-email"])
    }

    /// The client is no trusted proxy: what only one may send (URL and method overrides,
    /// client-address claims, `x-envoy-*`, oauth2-proxy's verdict headers), and `forwarded`
    /// and `x-forwarded-host`, which Envoy does not set, are removed; what Envoy sets itself
    /// is left to it.
    @Test func whatOnlyATrustedProxyMaySendIsRemoved() throws {
        let w = try testWorker(Self.yaml)
        let forged = [
            "x-original-url", "x-http-method-override", "x-real-ip", "x-envoy-original-path", "x-auth-request-user",
            "forwarded", "x-forwarded-host"
        ]
        var headers = Dictionary(uniqueKeysWithValues: forged.map { ($0, "forged") })
        for name in ["x-forwarded-for", "x-forwarded-proto", "x-request-id", "user-agent"] { headers[name] = "ok" }
        let r = try response(call(w, Self.checkRequest("/public/x", headers)))
        #expect(r.status.code == 0)
        #expect(Set(r.okResponse.headersToRemove) == Set(forged))
    }

    /// A request the message describes that no proxy could pass on, or past the limits, is a
    /// verdict (denied, PERMISSION_DENIED with 400 or 431): never the service failing, which
    /// Envoy's failure_mode_allow would let through.
    @Test func aBadDescribedRequestIsADeniedVerdict() throws {
        let w = try testWorker(Self.yaml)
        let bad = try response(call(w, Self.checkRequest("/public/x", ["x-a": "1\r\nx-user: admin"])))
        #expect(bad.status.code == 7 && bad.deniedResponse.status.code == 400)
        let many = Dictionary(uniqueKeysWithValues: (0..<120).map { ("x-\($0)", "v") })
        let large = try response(call(w, Self.checkRequest("/public/x", many)))
        #expect(large.status.code == 7 && large.deniedResponse.status.code == 431)
        let star = try response(call(w, Self.checkRequest("*")))
        #expect(star.status.code == 7 && star.deniedResponse.status.code == 400)
    }

    @Test func noTokenIsUnauthenticatedWithTheProxiedRequestsAnswer() throws {
        let w = try testWorker(Self.yaml)
        let r = try response(call(w, Self.checkRequest("/api/x")))
        #expect(r.status.code == 16 && r.deniedResponse.status.code == 401)
        let fields = Dictionary(
            r.deniedResponse.headers.map { ($0.header.key, $0.header.value) }, uniquingKeysWith: { a, _ in a })
        #expect(fields["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
        #expect(fields["Content-Type"] == "application/json")
        #expect(r.deniedResponse.body.contains("\"error\""))
    }

    @Test func noRouteIsPermissionDeniedWith404() throws {
        let yaml = Self.yaml.replacingOccurrences(of: "path_prefix: /public/", with: "path_prefix: /pub/")
        let r = try response(call(try testWorker(yaml), Self.checkRequest("/elsewhere")))
        #expect(r.status.code == 7 && r.deniedResponse.status.code == 404)
    }

    @Test func anUntrustedPeerIsRefusedAsACall() throws {
        let t = call(try testWorker(Self.yaml), Self.checkRequest("/public/x"), peer: "192.0.2.1")
        #expect(t.status == 200 && t.head?.fields.first("grpc-status") == "7" && t.body.isEmpty)
    }

    @Test(arguments: [
        ([UInt8](), "3"), ([0, 0, 0, 0, 9, 1], "3"), ([1, 0, 0, 0, 1, 0], "12"), ([0, 0, 0, 0, 1, 0xFF], "3"),
        ([0, 0, 0, 0, 0], "3")
    ])
    func malformedCallsAreRefused(body: [UInt8], status: String) throws {
        let t = call(try testWorker(Self.yaml), body)
        #expect(t.head?.fields.first("grpc-status") == status)
    }

    @Test func notAGRPCCallIs415() throws {
        let w = try testWorker(Self.yaml)
        #expect(call(w, Self.checkRequest("/public/x"), version: (1, 1)).status == 415)
        #expect(call(w, Self.checkRequest("/public/x"), contentType: "application/json").status == 415)
    }

    @Test func offMeansThePathIsAnOrdinaryRequest() throws {
        let yaml = Self.yaml.replacingOccurrences(of: "decision: { ext_authz_grpc: true }", with: "decision: {}")
        // No route matches the service path: the router's 404, not a gRPC answer.
        let t = call(try testWorker(yaml), Self.checkRequest("/public/x"))
        #expect(t.head?.fields.first("grpc-status") != "0" && t.trailers.first("grpc-status") == nil)
    }
}

@Suite("ext_authz over gRPC: how a refusal is told")
struct CheckVerdictTests {
    static func denied(_ status: Int, outage: Bool) throws -> Envoy_Service_Auth_V3_CheckResponse {
        let answer = ErrorResponse.make(status, error: "e", description: "why", requestID: "r1")
        return try Envoy_Service_Auth_V3_CheckResponse(
            serializedBytes: CheckVerdict.denied(answer, requestID: "r1", outage: outage))
    }

    /// 401 and a login redirect: UNAUTHENTICATED; another refusal, a 5xx included:
    /// PERMISSION_DENIED; both as a denied response. Only an outage (a store or key server
    /// out) is the service failing: an error_response, so that Envoy's failure_mode_allow and
    /// status_on_error decide; what a client can cause never is.
    @Test(arguments: [
        (401, Int32(16), false), (302, 16, false), (403, 7, false), (404, 7, false), (400, 7, false),
        (431, 7, false), (502, 7, false), (500, 7, false), (503, 14, true), (504, 14, true)
    ])
    func statusAndForm(status: Int, code: Int32, error: Bool) throws {
        let r = try Self.denied(status, outage: error)
        #expect(r.status.code == code && r.status.message == "why")
        let http = error ? r.errorResponse : r.deniedResponse
        if case .errorResponse = r.httpResponse { #expect(error) } else { #expect(!error) }
        #expect(Int(http.status.code) == status)
        #expect(http.headers.contains { $0.header.key == "X-Request-Id" && $0.header.value == "r1" })
        #expect(http.body.contains("\"error\":\"e\""))
    }
}

@Suite("gRPC length-prefixed messages")
struct GRPCMessageTests {
    @Test func framedThenReadIsTheMessage() throws {
        let message: [UInt8] = Array(repeating: 7, count: 300)
        let framed = GRPCMessage.framed(message)
        #expect(framed.prefix(5) == [0, 0, 0, 1, 44])
        #expect(Array(try GRPCMessage.unary(framed).get()) == message)
        #expect(Array(try GRPCMessage.unary([0, 0, 0, 0, 0]).get()).isEmpty)
    }

    @Test(arguments: [
        ([UInt8](), GRPCStatus.invalidArgument), ([0, 0, 0, 0], .invalidArgument),
        ([0, 0, 0, 0, 2, 1], .invalidArgument),
        ([0, 0, 0, 0, 1, 1, 2], .invalidArgument), ([1, 0, 0, 0, 0], .unimplemented),
        ([2, 0, 0, 0, 0], .invalidArgument)
    ])
    func notOneUncompressedMessage(body: [UInt8], status: GRPCStatus) {
        guard case .failure(let p) = GRPCMessage.unary(body) else {
            Issue.record("\(body) was read as a message")
            return
        }
        #expect(p.status == status)
    }
}
