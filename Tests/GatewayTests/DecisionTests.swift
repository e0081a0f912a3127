import Foundation
import Logging
import Testing
@testable import Gateway
@testable import Reactor

/// Decision mode without sockets: `decision:` parsing, reading the original request from each
/// ingress's headers, and a worker's verdicts over the in-memory transport (the real ingresses
/// are in tests/integration/test_decision_ingress.py).
@Suite("Decision mode: config, the original request, verdicts")
struct DecisionTests {
    static let yaml = """
    listen: 127.0.0.1:1
    admin_listen: "off"
    workers: 1
    trusted_proxies: [10.0.0.0/8]
    decision: { allow_status: 202 }
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
      - name: web
        match: { path_prefix: /public/ }
        upstream: app
        auth: none
    """

    static func worker(_ yaml: String = yaml) throws -> Worker {
        let config = try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get()
        return Worker(id: 0, config: config, log: Logger(label: "test"), processPrefix: "t",
                      stores: StoreBackend(.memory, replayCapacity: 100))
    }

    func send(_ w: Worker, _ target: String, _ fields: [(name: String, value: String)], peer: String = "10.1.2.3") -> InMemoryTransport {
        let (exchange, transport) = InMemoryTransport.exchange("GET", target, fields: [("Host", "tokengate:8080")] + fields, peer: peer)
        w.handle(exchange)
        return transport
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1) { return e.description }
        return ""
    }

    // MARK: config

    @Test func configDefaultsAndOff() throws {
        let on = try ConfigParser.parse(yaml: Self.yaml, environment: [:], baseDirectory: "/", cores: 1).get().decision
        #expect(on.enabled && on.path == "/oauth2/auth" && on.extAuthzPrefix == "/ext_authz" && on.allowStatus == 202 && on.loginResponse == .auto)
        let without = Self.yaml.replacingOccurrences(of: "decision: { allow_status: 202 }\n", with: "")
        #expect(try !ConfigParser.parse(yaml: without, environment: [:], baseDirectory: "/", cores: 1).get().decision.enabled)
    }

    @Test func configProblemsNameTheKeyAndTheFix() {
        let bad = Self.yaml.replacingOccurrences(of: "decision: { allow_status: 202 }",
                                                 with: "decision: { path: oauth, ext_authz_prefix: /x/, allow_status: 204, login_response: html, mode: x }")
        let p = problems(bad)
        #expect(p.contains("decision.path: must be a normalized path"))
        #expect(p.contains("decision.ext_authz_prefix: must be a normalized path"))
        #expect(p.contains("decision.allow_status: must be 200 or 202"))
        #expect(p.contains("decision.login_response: must be auto, 401"))
        #expect(p.contains("decision.mode: is not a known key"))
        let untrusted = Self.yaml.replacingOccurrences(of: "trusted_proxies: [10.0.0.0/8]\n", with: "")
        #expect(problems(untrusted).contains("decision: needs trusted_proxies"))
        let under = Self.yaml.replacingOccurrences(of: "allow_status: 202", with: "path: /ext_authz/auth")
        #expect(problems(under).contains("lies under decision.ext_authz_prefix"))
    }

    // MARK: the original request

    func read(_ fields: [(name: String, value: String)], method: String = "GET", envoy: String? = nil, trusted: Bool = true)
        -> Result<DecisionRequest, DecisionRequest.Problem> {
        let head = HTTPRequestHead(methodName: method, target: "/oauth2/auth", version: (1, 1), fields: HTTP1Fields(fields))
        return DecisionRequest.read(head, extAuthzTarget: envoy, connectionScheme: "http", peer: "10.0.0.1", peerTrusted: trusted)
    }

    @Test func nginxOriginalURL() throws {
        let r = try read([("X-Original-URL", "https://App.example.com:8443/a/b?x=1"), ("X-Original-Method", "POST")]).get()
        #expect(r.method == "POST" && r.scheme == "https" && r.host == "App.example.com:8443" && r.target == "/a/b?x=1" && r.style == .nginx)
        let path = try read([("X-Original-URL", "/a?q"), ("X-Forwarded-Host", "app.example.com"), ("X-Forwarded-Proto", "https")]).get()
        #expect(path.url == "https://app.example.com/a?q")
        #expect(try read([("X-Original-URL", "https://app.example.com")]).get().target == "/")
    }

    @Test func traefikCaddyAndEnvoy() throws {
        let f = try read([("X-Forwarded-Method", "DELETE"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "app"),
                          ("X-Forwarded-Uri", "/x/../y")]).get()
        #expect(f.method == "DELETE" && f.url == "https://app/x/../y" && f.style == .forwardAuth)
        let e = try read([("Host", "app.example.com")], method: "PUT", envoy: "/orders/1").get()
        #expect(e.method == "PUT" && e.url == "http://app.example.com/orders/1" && e.style == .envoy)
    }

    @Test func refusedDescriptions() {
        func refused(_ fields: [(name: String, value: String)], trusted: Bool = true, _ why: String) {
            guard case .failure(let p) = read(fields, trusted: trusted) else { Issue.record("accepted: \(fields)"); return }
            #expect(p.description.contains(why), "\(p.description)")
        }
        refused([("X-Forwarded-Uri", "/a"), ("X-Forwarded-Host", "app")], trusted: false, "answers only the ingress")
        refused([], "did not say which request")
        refused([("X-Original-URL", "https://a/x"), ("X-Original-URL", "https://b/x")], "more than one X-Original-URL")
        refused([("X-Original-URL", "javascript:alert(1)")], "not an absolute http(s) URL")
        refused([("Host", "a"), ("Host", "b"), ("X-Forwarded-Uri", "/x"), ("X-Forwarded-Host", "app")], "more than one Host")
        refused([("X-Original-URL", "https://user@app/x")], "not an absolute http(s) URL")
        refused([("X-Original-URL", "/x")], "send X-Forwarded-Host too")
        refused([("X-Forwarded-Uri", "/x")], "needs X-Forwarded-Host")
        refused([("X-Forwarded-Uri", "x"), ("X-Forwarded-Host", "app")], "must be a path")
        refused([("X-Forwarded-Uri", "/x"), ("X-Forwarded-Host", "a b")], "not a valid host")
        refused([("X-Forwarded-Uri", "/x"), ("X-Forwarded-Host", "app"), ("X-Forwarded-Method", "GE T")], "not a method")
    }

    @Test func sameOriginReturnIsItsPath() {
        let origin = RequestOrigin.Origin(scheme: "https", authority: "app.example.com")
        #expect(DecisionLogin.sameOriginPath("https://APP.example.com/a?b=1", origin: origin) == "/a?b=1")
        #expect(DecisionLogin.sameOriginPath("https://evil.example/a", origin: origin) == nil)
        #expect(DecisionLogin.sameOriginPath("http://app.example.com/a", origin: origin) == nil)
        #expect(DecisionLogin.sameOriginPath("/a", origin: origin) == nil)
    }

    // MARK: verdicts

    @Test func allowedVerdictHasTheConfiguredStatusAndNoBody() throws {
        let w = try Self.worker()
        let t = send(w, "/oauth2/auth", [("X-Forwarded-Uri", "/public/x"), ("X-Forwarded-Host", "app")])
        #expect(t.status == 202 && t.body.isEmpty && t.ended)
    }

    @Test func refusalIsTheProxiedRequestsRefusal() throws {
        let w = try Self.worker()
        let t = send(w, "/oauth2/auth", [("X-Original-URL", "https://app/api/orders")])
        #expect(t.status == 401 && t.head?.fields.first("WWW-Authenticate") == "Bearer realm=\"tokengate\"")
        let e = send(w, "/ext_authz/api/orders", [])
        #expect(e.status == 401)
    }

    @Test func pathConfusionIsRefusedAsForAProxiedRequest() throws {
        let w = try Self.worker()
        for probe in ["/public;/../api/x", "/public/..%2Fapi/x", "/../api/x"] {
            let t = send(w, "/oauth2/auth", [("X-Original-URL", "https://app" + probe)])
            #expect(t.status == 400, "\(probe)")
        }
        // Dot-segments that leave the route they start in: refused, as a proxied request is
        // (the ingress resolves them to /api/x; tokengate will not judge /public/ for it).
        let escape = send(w, "/oauth2/auth", [("X-Original-URL", "https://app/public/../api/x")])
        #expect(escape.status == 400 && escape.bodyText.contains("leave the route"))
        // Within one route: judged on the path they lead to.
        #expect(send(w, "/oauth2/auth", [("X-Original-URL", "https://app/api/v1/../x")]).status == 401)
        #expect(send(w, "/oauth2/auth", [("X-Original-URL", "https://app/nowhere")]).status == 404)
    }

    @Test func untrustedPeerGets400() throws {
        let w = try Self.worker()
        let t = send(w, "/oauth2/auth", [("X-Forwarded-Uri", "/public/x"), ("X-Forwarded-Host", "app")], peer: "192.0.2.1")
        #expect(t.status == 400 && t.bodyText.contains("invalid_request"))
        #expect(send(w, "/ext_authz/public/x", [], peer: "192.0.2.1").status == 400)
    }

    @Test func offMeansTheEndpointIsAnOrdinaryPath() throws {
        let w = try Self.worker(Self.yaml.replacingOccurrences(of: "decision: { allow_status: 202 }", with: "decision: { enabled: false }"))
        let t = send(w, "/oauth2/auth", [("X-Forwarded-Uri", "/public/x"), ("X-Forwarded-Host", "app")])
        #expect(t.status == 404)
    }
}
