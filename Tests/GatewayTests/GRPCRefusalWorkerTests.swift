import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// The gateway's own refusals to a gRPC or gRPC-Web call, over the in-memory transport:
/// trailers-only (200, `grpc-status`, `grpc-message`, no body), the challenge kept in the
/// same head; everything else keeps its plain form (the wire, with a real gRPC client, is
/// IntegrationTests/h2/test_grpc_refusals.py).
@Suite("gRPC refusals from the worker")
struct GRPCRefusalWorkerTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        public_url: https://api.example
        trusted_proxies: [10.0.0.0/8]
        decision: {}
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /pkg.Svc/ }
            upstream: app
            auth: bearer
            issuers: [one]
          - name: admin
            match: { path_prefix: /pkg.Admin/ }
            upstream: app
            auth: bearer
            issuers: [one]
            require: { scopes: [admin] }
          - name: web
            match: { path: /public }
            upstream: app
            auth: none
        """

    static let grpc: [(name: String, value: String)] = [
        ("Host", "api.example"), ("Content-Type", "application/grpc"), ("TE", "trailers")
    ]

    func send(
        _ w: Worker, _ target: String, method: String = "POST", fields: [(name: String, value: String)] = grpc,
        version: (major: Int, minor: Int) = (2, 0)
    ) -> InMemoryTransport {
        let (exchange, transport) = InMemoryTransport.exchange(
            method, target, fields: fields, body: [0, 0, 0, 0, 0], version: version)
        w.handle(exchange)
        return transport
    }

    /// The head's gRPC form: 200, no body, trailers-only, the code and the message.
    func expectTrailersOnly(
        _ t: InMemoryTransport, code: GRPCStatus, contentType: String = "application/grpc",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(t.status == 200 && t.body.isEmpty && t.ended, sourceLocation: sourceLocation)
        #expect(t.head?.trailersOnly == true, sourceLocation: sourceLocation)
        let f = t.head?.flattened.fields
        #expect(f?.first("content-type") == contentType, sourceLocation: sourceLocation)
        #expect(f?.first("grpc-status") == String(code.rawValue), sourceLocation: sourceLocation)
        #expect(f?.first("grpc-message")?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(f?.first("x-request-id") != nil, sourceLocation: sourceLocation)
        #expect(f?.first("content-security-policy") == nil, sourceLocation: sourceLocation)
    }

    @Test func noTokenIsUnauthenticatedWithTheChallengeAsMetadata() throws {
        let w = try testWorker(Self.yaml)
        let t = send(w, "/pkg.Svc/Get")
        expectTrailersOnly(t, code: .unauthenticated)
        #expect(t.head?.flattened.fields.first("www-authenticate")?.hasPrefix("Bearer") == true)
        #expect(w.metrics.inflight == 0)
    }

    @Test func aBadTokenIsUnauthenticatedAndSaysWhy() throws {
        let w = try testWorker(Self.yaml)
        let t = send(w, "/pkg.Svc/Get", fields: Self.grpc + [("Authorization", "Bearer not.a.jwt")])
        expectTrailersOnly(t, code: .unauthenticated)
        let challenge = t.head?.flattened.fields.first("www-authenticate") ?? ""
        #expect(challenge.contains("invalid_token"))
    }

    @Test func aMissingScopeIsPermissionDenied() throws {
        let w = try testWorker(Self.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let token = try testAccessToken(key: key, now: Int64(Date().timeIntervalSince1970))
        let t = send(w, "/pkg.Admin/Delete", fields: Self.grpc + [("Authorization", "Bearer \(token)")])
        expectTrailersOnly(t, code: .permissionDenied)
        #expect(t.head?.flattened.fields.first("www-authenticate")?.contains("insufficient_scope") == true)
    }

    @Test func noRouteIsUnimplemented() throws {
        let t = send(try testWorker(Self.yaml), "/other.Svc/Get")
        expectTrailersOnly(t, code: .unimplemented)
    }

    @Test func aMethodTheGatewayDoesNotServeIsUnknown() throws {
        expectTrailersOnly(send(try testWorker(Self.yaml), "/public", method: "BREW"), code: .unknown)
    }

    @Test func aMalformedTargetIsInternal() throws {
        expectTrailersOnly(send(try testWorker(Self.yaml), "/pkg.Svc/%2F..%2Fx"), code: .internal)
    }

    @Test func gRPCWebOverHTTP1EchoesItsType() throws {
        let w = try testWorker(Self.yaml)
        let fields: [(name: String, value: String)] = [
            ("Host", "api.example"), ("Content-Type", "application/grpc-web-text+proto"), ("X-Grpc-Web", "1")
        ]
        let t = send(w, "/pkg.Svc/Get", fields: fields, version: (1, 1))
        expectTrailersOnly(t, code: .unauthenticated, contentType: "application/grpc-web-text+proto")
        #expect(t.head?.flattened.fields.first("www-authenticate") != nil)
    }

    /// Near misses and other content types keep the JSON refusal.
    @Test(arguments: ["application/grpcx", "application/grpc-webfoo", "application/json", "text/plain"])
    func otherContentTypesKeepTheJSONRefusal(contentType: String) throws {
        let t = send(
            try testWorker(Self.yaml), "/pkg.Svc/Get",
            fields: [("Host", "api.example"), ("Content-Type", contentType)])
        #expect(t.status == 401 && t.head?.trailersOnly == false)
        #expect(t.bodyText.contains("\"error\":\"unauthorized\"") || t.bodyText.contains("\"error\""))
        #expect(t.head?.flattened.fields.first("grpc-status") == nil)
    }

    /// A decision endpoint's answer is a verdict read by its status: a 200 there would let
    /// the request through, so a gRPC call's refusal stays a 401.
    @Test func aDecisionVerdictIsNeverReshaped() throws {
        let w = try testWorker(Self.yaml)
        let t = askForwardAuth(w, "/pkg.Svc/Get", [("Content-Type", "application/grpc")])
        #expect(t.status == 401 && t.head?.trailersOnly == false)
        #expect(t.head?.flattened.fields.first("grpc-status") == nil)
    }

    /// A login route never redirects a gRPC call, even a GET that looks like a navigation.
    @Test(arguments: [("POST", "application/grpc"), ("GET", "application/grpc-web")])
    func aLoginRouteAnswersUnauthenticated(method: String, contentType: String) throws {
        let w = try testWorker(
            """
            listen: 127.0.0.1:1
            admin_listen: "off"
            workers: 1
            public_url: https://app.example
            session: { keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] }
            issuers:
              corp: { issuer: "http://idp.example", discovery: true, audiences: [api] }
            clients:
              web: { issuer: corp, client_id: web, auth: client_secret_post, secret: "0123456789abcdef0123456789abcdef", request_mode: plain }
            upstreams:
              app: { url: "http://127.0.0.1:9" }
            routes:
              - name: app
                match: { path_prefix: / }
                upstream: app
                auth: login
                client: web
            """)
        let fields: [(name: String, value: String)] = [
            ("Host", "app.example"), ("Content-Type", contentType), ("Accept", "text/html"),
            ("Sec-Fetch-Mode", "navigate")
        ]
        let t = send(w, "/pkg.Svc/Get", method: method, fields: fields)
        expectTrailersOnly(t, code: .unauthenticated, contentType: contentType)
        #expect(t.head?.flattened.fields.first("location") == nil)
    }

    /// Each kind of refusal the gateway writes, as `Worker.answer` shapes it: the code, the
    /// description as the message, and the answer's own fields kept.
    @Test(arguments: [
        (400, GRPCStatus.internal), (401, .unauthenticated), (403, .permissionDenied), (404, .unimplemented),
        (405, .unknown), (408, .unknown), (413, .resourceExhausted), (429, .resourceExhausted), (502, .unavailable),
        (503, .unavailable), (504, .deadlineExceeded)
    ])
    func eachRefusalKind(status: Int, code: GRPCStatus) throws {
        let r = ErrorResponse.make(
            status, error: "e", description: "why: 100% \u{E9}", requestID: "r1",
            headers: [("WWW-Authenticate", "DPoP algs=\"ES256\", error=\"use_dpop_nonce\""), ("DPoP-Nonce", "n1")])
        #expect(r.isGRPCRefusal)
        let (exchange, t) = InMemoryTransport.exchange("POST", "/p.S/M", fields: Self.grpc, version: (2, 0))
        r.sendGRPC(.grpc, exchange, requestID: "r1", close: false)
        let f = t.head?.flattened.fields
        #expect(t.status == 200 && t.body.isEmpty && t.head?.trailersOnly == true)
        #expect(f?.first("grpc-status") == String(code.rawValue))
        #expect(f?.first("grpc-message") == "why: 100%25 %C3%A9")
        #expect(f?.first("www-authenticate") == "DPoP algs=\"ES256\", error=\"use_dpop_nonce\"")
        #expect(f?.first("dpop-nonce") == "n1" && f?.first("x-request-id") == "r1")
    }

    @Test func successesAndRedirectsAreNoRefusals() {
        #expect(!GatewayResponse(status: 204).isGRPCRefusal)
        #expect(!GatewayResponse.redirect("/x").isGRPCRefusal)
        #expect(GatewayResponse(status: 302).grpcMessage == "Found")
        let page = GatewayResponse.page(503, title: "t", message: "try later")
        #expect(page.isGRPCRefusal && page.grpcMessage == "try later")
    }
}
