import Foundation
import Logging
import Testing

@testable import Gateway
@testable import Reactor

/// Decision mode without sockets: `decision:` parsing, reading the original request from each
/// ingress's headers, and a worker's verdicts over the in-memory transport (the real ingresses
/// are in IntegrationTests/decision/test_ingress.py).
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
        try testWorker(yaml)
    }

    func send(_ w: Worker, _ target: String, _ fields: [(name: String, value: String)], peer: String = "10.1.2.3")
        -> InMemoryTransport
    {
        let (exchange, transport) = InMemoryTransport.exchange(
            "GET", target, fields: [("Host", "tokengate:8080")] + fields, peer: peer)
        w.handle(exchange)
        return transport
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1) {
            return e.description
        }
        return ""
    }

    // MARK: config

    @Test func configDefaultsAndOff() throws {
        let on = try ConfigParser.parse(yaml: Self.yaml, environment: [:], baseDirectory: "/", cores: 1).get().decision
        #expect(on.enabled && on.path == "/_tokengate/auth" && on.forwardAuthPath == "/_tokengate/forward-auth")
        #expect(
            on.extAuthzPrefix == "/_tokengate/ext_authz" && on.allowStatus == 202 && on.loginResponse == .auto
                && on.secret == nil)
        let without = Self.yaml.replacingOccurrences(of: "decision: { allow_status: 202 }\n", with: "")
        #expect(
            try !ConfigParser.parse(yaml: without, environment: [:], baseDirectory: "/", cores: 1).get().decision
                .enabled)
        let some = Self.yaml.replacingOccurrences(
            of: "allow_status: 202", with: "forward_auth_path: \"off\", secret: 0123456789abcdef0123")
        let d = try ConfigParser.parse(yaml: some, environment: [:], baseDirectory: "/", cores: 1).get().decision
        #expect(
            d.forwardAuthPath == nil && d.path == "/_tokengate/auth" && d.secret == Array("0123456789abcdef0123".utf8))
    }

    func withDecision(_ block: String) -> String {
        Self.yaml.replacingOccurrences(of: "decision: { allow_status: 202 }", with: "decision: \(block)")
    }

    @Test func configProblemsNameTheKeyAndTheFix() {
        let p = problems(
            withDecision("{ path: oauth, ext_authz_prefix: /x/, allow_status: 204, login_response: html, mode: x }"))
        #expect(p.contains("decision.path: must be a normalized path"))
        #expect(p.contains("decision.ext_authz_prefix: must be a normalized path"))
        #expect(p.contains("decision.allow_status: must be 200 or 202"))
        #expect(p.contains("decision.login_response: must be auto, 401"))
        #expect(p.contains("decision.mode: is not a known key"))
        let untrusted = Self.yaml.replacingOccurrences(of: "trusted_proxies: [10.0.0.0/8]\n", with: "")
        #expect(problems(untrusted).contains("decision: needs trusted_proxies"))
        #expect(
            problems(withDecision("{ path: /ext/auth, ext_authz_prefix: /ext }")).contains(
                "decision.path: lies under decision.ext_authz_prefix"))
        #expect(
            problems(withDecision("{ forward_auth_path: /ext/x, ext_authz_prefix: /ext }"))
                .contains("decision.forward_auth_path: lies under decision.ext_authz_prefix"))
        // The recipes route /oauth2/ to tokengate for everyone: no decision endpoint there.
        #expect(problems(withDecision("{ path: /oauth2/auth }")).contains("decision.path: must not lie under /oauth2/"))
        #expect(
            problems(withDecision("{ forward_auth_path: /oauth2/fa }")).contains(
                "decision.forward_auth_path: must not lie under /oauth2/"))
        #expect(
            problems(withDecision("{ path: /a, forward_auth_path: /a }")).contains(
                "each ingress style needs its own endpoint"))
        #expect(
            problems(withDecision("{ path: \"off\", forward_auth_path: \"off\", ext_authz_prefix: \"off\" }")).contains(
                "every endpoint is off"))
        #expect(
            problems(withDecision("{ secret: short }")).contains("decision.secret: must be at least 16 visible ASCII"))
        #expect(
            problems(withDecision("{ secret: \"0123456789 abcdef0\" }")).contains(
                "decision.secret: must be at least 16"))
        #expect(
            problems(withDecision("{ secret_file: /nonexistent/secret }")).contains(
                "decision.secret_file: cannot read /nonexistent/secret"))
        #expect(
            problems(withDecision("{ secret: 0123456789abcdef0, secret_file: /x }")).contains(
                "give either secret or secret_file"))
    }

    @Test func secretFromAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tg-decision-secret-\(UUID().uuidString)")
        try "s3cr3t-0123456789abcdef\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let d = try ConfigParser.parse(
            yaml: withDecision("{ secret_file: \"\(file.path)\" }"), environment: [:], baseDirectory: "/", cores: 1
        )
        .get().decision
        #expect(d.secret == Array("s3cr3t-0123456789abcdef".utf8))
    }

    // MARK: the original request

    static let forwardAuth: [(name: String, value: String)] = [
        ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "app"),
        ("X-Forwarded-Uri", "/public/x")
    ]
    static let nginx: [(name: String, value: String)] = [
        ("X-Original-URL", "https://app/public/x"), ("X-Original-Method", "GET")
    ]

    func read(
        _ fields: [(name: String, value: String)], style: DecisionRequest.Style = .nginx, method: String = "GET",
        envoy: String? = nil, trusted: Bool = true, secret: String? = nil
    ) -> Result<DecisionRequest, DecisionRequest.Problem> {
        let head = HTTPRequestHead(
            methodName: method, target: "/_tokengate/auth", version: (1, 1), fields: HTTP1Fields(fields))
        return DecisionRequest.read(
            head, style: style, extAuthzTarget: envoy, connectionScheme: "http", peer: "10.0.0.1",
            peerTrusted: trusted, secret: secret.map { Array($0.utf8) })
    }

    @Test func nginxOriginalURL() throws {
        let r = try read([("X-Original-URL", "https://App.example.com:8443/a/b?x=1"), ("X-Original-Method", "POST")])
            .get()
        #expect(
            r.method == "POST" && r.scheme == "https" && r.host == "App.example.com:8443" && r.target == "/a/b?x=1"
                && r.style == .nginx)
        #expect(
            try read([("X-Original-URL", "https://app.example.com"), ("X-Original-Method", "GET")]).get().target == "/")
    }

    @Test func traefikCaddyAndEnvoy() throws {
        let f = try read(
            [
                ("X-Forwarded-Method", "DELETE"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "app"),
                ("X-Forwarded-Uri", "/x/../y")
            ], style: .forwardAuth
        ).get()
        #expect(f.method == "DELETE" && f.url == "https://app/x/../y" && f.style == .forwardAuth)
        let e = try read([("Host", "app.example.com")], style: .envoy, method: "PUT", envoy: "/orders/1").get()
        #expect(e.method == "PUT" && e.url == "http://app.example.com/orders/1" && e.style == .envoy)
    }

    /// Review finding 1: each endpoint reads only its own convention's headers; the other
    /// style's, which a client can send through Caddy, Traefik or nginx, change nothing.
    @Test func theOtherStylesHeadersAreNeverRead() throws {
        let spoofNginx: [(name: String, value: String)] = [
            ("X-Original-URL", "https://evil/public/spoof"), ("X-Original-Method", "HEAD")
        ]
        let f = try read(Self.forwardAuth + spoofNginx, style: .forwardAuth).get()
        #expect(f.url == "https://app/public/x" && f.method == "GET")
        // Even twice: a header the style does not read is not counted either.
        #expect(
            try read(Self.forwardAuth + spoofNginx + spoofNginx, style: .forwardAuth).get().url
                == "https://app/public/x")
        let n = try read(
            Self.nginx + [
                ("X-Forwarded-Uri", "/spoof"), ("X-Forwarded-Method", "HEAD"), ("X-Forwarded-Host", "evil"),
                ("X-Forwarded-Proto", "http")
            ]
        ).get()
        #expect(n.url == "https://app/public/x" && n.method == "GET")
        let e = try read(
            [
                ("Host", "app"), ("X-Original-URL", "https://evil/x"), ("X-Forwarded-Uri", "/y"),
                ("X-Forwarded-Method", "GET")
            ],
            style: .envoy, method: "DELETE", envoy: "/orders/1"
        ).get()
        #expect(e.url == "http://app/orders/1" && e.method == "DELETE")
        // Without its own headers a style refuses, whatever the other style's say.
        guard case .failure(let p) = read(spoofNginx, style: .forwardAuth) else {
            Issue.record("accepted")
            return
        }
        #expect(p.description.contains("did not send X-Forwarded-Method"))
        guard case .failure(let q) = read(Self.forwardAuth) else {
            Issue.record("accepted")
            return
        }
        #expect(q.description.contains("did not send X-Original-URL"))
    }

    @Test func refusedDescriptions() {
        func refused(
            _ fields: [(name: String, value: String)], style: DecisionRequest.Style = .nginx, trusted: Bool = true,
            secret: String? = nil, _ why: String
        ) {
            guard case .failure(let p) = read(fields, style: style, trusted: trusted, secret: secret) else {
                Issue.record("accepted: \(fields)")
                return
            }
            #expect(p.description.contains(why), "\(p.description)")
        }
        refused(Self.forwardAuth, style: .forwardAuth, trusted: false, "answers only the ingress")
        refused(Self.nginx, trusted: false, "answers only the ingress")
        refused([], "did not send X-Original-URL")
        refused(
            [("X-Original-URL", "https://a/x"), ("X-Original-URL", "https://b/x"), ("X-Original-Method", "GET")],
            "more than one X-Original-URL")
        refused(
            [("X-Original-URL", "https://a/x"), ("X-Original-Method", "GET"), ("X-Original-Method", "DELETE")],
            "more than one X-Original-Method")
        refused(
            [("X-Original-URL", "javascript:alert(1)"), ("X-Original-Method", "GET")], "must be an absolute http(s) URL"
        )
        refused(
            [("X-Original-URL", "https://user@app/x"), ("X-Original-Method", "GET")], "must be an absolute http(s) URL")
        // Review finding 4: no path form (its host would be a client's X-Forwarded-Host), and no
        // method but X-Original-Method (not X-Forwarded-Method, not the subrequest's own).
        refused(
            [("X-Original-URL", "/x"), ("X-Forwarded-Host", "app"), ("X-Original-Method", "GET")],
            "must be an absolute http(s) URL")
        refused([("X-Original-URL", "https://app/x")], "did not send X-Original-Method")
        refused([("X-Original-URL", "https://app/x"), ("X-Forwarded-Method", "GET")], "did not send X-Original-Method")
        refused([("X-Original-URL", "https://app/x"), ("X-Original-Method", "")], "did not send X-Original-Method")
        refused([("Host", "a"), ("Host", "b")] + Self.forwardAuth, style: .forwardAuth, "more than one Host")
        for missing in ["X-Forwarded-Method", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Uri"] {
            refused(Self.forwardAuth.filter { $0.name != missing }, style: .forwardAuth, "did not send \(missing)")
        }
        refused(
            Self.forwardAuth + [("X-Forwarded-Uri", "/admin/x")], style: .forwardAuth, "more than one X-Forwarded-Uri")
        func fa(_ name: String, _ value: String) -> [(name: String, value: String)] {
            Self.forwardAuth.map { $0.name == name ? (name, value) : $0 }
        }
        refused(fa("X-Forwarded-Uri", "x"), style: .forwardAuth, "must be a path")
        refused(fa("X-Forwarded-Host", "a b"), style: .forwardAuth, "not a valid host")
        refused(fa("X-Forwarded-Method", "GE T"), style: .forwardAuth, "not a method")
        refused(fa("X-Forwarded-Proto", "gopher"), style: .forwardAuth, "must be http or https")
        // decision.secret: missing, wrong, a prefix of it, twice.
        let secret = "0123456789abcdef0123"
        refused(Self.nginx, secret: secret, "answers only the ingress (decision.secret)")
        refused(
            Self.nginx + [("X-Tokengate-Decision-Secret", "0123456789abcdef0124")], secret: secret, "decision.secret")
        refused(Self.nginx + [("X-Tokengate-Decision-Secret", "0123456789abcdef")], secret: secret, "decision.secret")
        refused(
            Self.nginx + [("X-Tokengate-Decision-Secret", secret), ("X-Tokengate-Decision-Secret", secret)],
            secret: secret,
            "more than one X-Tokengate-Decision-Secret")
    }

    @Test func theSecretAdmitsAndIsNotPartOfTheJudgedRequest() throws {
        let secret = "0123456789abcdef0123"
        let r = try read(Self.nginx + [("X-Tokengate-Decision-Secret", secret)], secret: secret).get()
        let decision = HTTPRequestHead(
            methodName: "GET", target: "/_tokengate/auth", version: (1, 1),
            fields: HTTP1Fields(Self.nginx + [("X-Tokengate-Decision-Secret", secret), ("Host", "tg")]))
        let judged = r.head(from: decision)
        #expect(
            judged.fields.first("X-Tokengate-Decision-Secret") == nil && judged.fields.first("Host") == "app"
                && judged.target == "/public/x")
    }

    @Test func upstreamCookieLeavesOutTheGatewaysOwn() {
        func head(_ cookies: [String]) -> HTTPRequestHead {
            HTTPRequestHead(
                methodName: "GET", target: "/", version: (1, 1), fields: HTTP1Fields(cookies.map { ("Cookie", $0) }))
        }
        let own: Set<String> = ["tokengate_session", "tokengate_login"]
        #expect(DecisionVerdict.upstreamCookie(head(["a=1; tokengate_session=sealed; b=2"]), own: own) == "a=1; b=2")
        #expect(
            DecisionVerdict.upstreamCookie(head(["tokengate_session=sealed", "c=3; tokengate_login=x"]), own: own)
                == "c=3")
        #expect(DecisionVerdict.upstreamCookie(head(["tokengate_session=sealed"]), own: own) == "")
        #expect(DecisionVerdict.upstreamCookie(head([]), own: own) == "")
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
        let t = send(w, "/_tokengate/forward-auth", Self.forwardAuth)
        #expect(t.status == 202 && t.body.isEmpty && t.ended)
        #expect(send(w, "/_tokengate/auth", Self.nginx).status == 202)
        // Cookies pass on to the ingress's upstream request in the verdict.
        let c = send(w, "/_tokengate/auth", Self.nginx + [("Cookie", "theme=dark")])
        #expect(c.status == 202 && c.head?.fields.first("X-Tokengate-Cookie") == "theme=dark")
        #expect(t.head?.fields.first("X-Tokengate-Cookie") == "")
    }

    /// Review finding 1 end to end: a protected path with the other style's headers saying
    /// "public" is judged as the protected path it is.
    @Test func aSpoofedDescriptionOfTheOtherStyleChangesNothing() throws {
        let w = try Self.worker()
        let caddy = send(
            w, "/_tokengate/forward-auth",
            [
                ("X-Forwarded-Method", "GET"), ("X-Forwarded-Proto", "http"),
                ("X-Forwarded-Host", "app"), ("X-Forwarded-Uri", "/api/secret"),
                ("X-Original-URL", "http://app/public/x"), ("X-Original-Method", "GET")
            ])
        #expect(caddy.status == 401)
        let nginx = send(
            w, "/_tokengate/auth",
            [
                ("X-Original-URL", "http://app/api/secret"), ("X-Original-Method", "GET"),
                ("X-Forwarded-Uri", "/public/x"), ("X-Forwarded-Host", "app"), ("X-Forwarded-Method", "GET")
            ])
        #expect(nginx.status == 401)
        // The old endpoint under /oauth2/ is no decision endpoint any more.
        #expect(send(w, "/oauth2/auth", Self.forwardAuth).status == 404)
    }

    @Test func theSecretIsRequiredWhenConfigured() throws {
        let w = try Self.worker(withDecision("{ secret: 0123456789abcdef0123 }"))
        #expect(send(w, "/_tokengate/forward-auth", Self.forwardAuth).status == 400)
        #expect(
            send(
                w, "/_tokengate/forward-auth",
                Self.forwardAuth + [("X-Tokengate-Decision-Secret", "wrong-wrong-wrong-1")]
            ).status == 400)
        #expect(send(w, "/_tokengate/ext_authz/public/x", []).status == 400)
        #expect(
            send(
                w, "/_tokengate/forward-auth",
                Self.forwardAuth + [("X-Tokengate-Decision-Secret", "0123456789abcdef0123")]
            ).status == 200)
        #expect(
            send(w, "/_tokengate/ext_authz/public/x", [("X-Tokengate-Decision-Secret", "0123456789abcdef0123")]).status
                == 200)
    }

    @Test func refusalIsTheProxiedRequestsRefusal() throws {
        let w = try Self.worker()
        let t = send(
            w, "/_tokengate/auth", [("X-Original-URL", "https://app/api/orders"), ("X-Original-Method", "GET")])
        #expect(t.status == 401 && t.head?.fields.first("WWW-Authenticate") == "Bearer realm=\"tokengate\"")
        let e = send(w, "/_tokengate/ext_authz/api/orders", [])
        #expect(e.status == 401)
    }

    func nginxAsk(_ w: Worker, _ target: String) -> InMemoryTransport {
        send(w, "/_tokengate/auth", [("X-Original-URL", "https://app" + target), ("X-Original-Method", "GET")])
    }

    @Test func pathConfusionIsRefusedAsForAProxiedRequest() throws {
        let w = try Self.worker()
        for probe in ["/public;/../api/x", "/public/..%2Fapi/x", "/../api/x"] {
            #expect(nginxAsk(w, probe).status == 400, "\(probe)")
        }
        // Dot-segments that leave the route they start in: refused, as a proxied request is
        // (the ingress resolves them to /api/x; tokengate will not judge /public/ for it).
        let escape = nginxAsk(w, "/public/../api/x")
        #expect(escape.status == 400 && escape.bodyText.contains("leave the route"))
        // Within one route: judged on the path they lead to.
        #expect(nginxAsk(w, "/api/v1/../x").status == 401)
        #expect(nginxAsk(w, "/nowhere").status == 404)
    }

    /// Review finding 8: a login endpoint is allowed only under its own path; a target that
    /// merely normalizes to one skipped the router's escape check.
    @Test func aLoginEndpointReachedThroughAnotherPathIsRefused() throws {
        let yaml = Self.yaml.replacingOccurrences(
            of: "issuers:\n",
            with: """
                issuers:
                  two: { issuer: "https://idp.two", discovery: true, audiences: [api] }

                """)
        let w = try Self.worker(
            yaml.replacingOccurrences(
                of: "routes:\n",
                with: """
                    public_url: https://app
                    session: { keys: ["AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="] }
                    clients:
                      web: { issuer: two, client_id: web, secret: s3cret-s3cret-s3cret, scopes: [openid] }
                    routes:
                      - name: app
                        match: { path_prefix: /app/ }
                        upstream: app
                        auth: login
                        client: web

                    """))
        #expect(nginxAsk(w, "/oauth2/start?rd=/x").status == 202)
        for probe in [
            "/api/../oauth2/start", "/api/%2e%2e/oauth2/start", "/api/%2E%2E/oauth2/start?rd=/", "/./oauth2/start",
            "/api/x/../../oauth2/callback"
        ] {
            let t = nginxAsk(w, probe)
            #expect(
                t.status == 400 && t.bodyText.contains("login endpoint is allowed only under its own path"),
                "\(probe) \(t.status)")
        }
    }

    @Test func untrustedPeerGets400() throws {
        let w = try Self.worker()
        let t = send(w, "/_tokengate/forward-auth", Self.forwardAuth, peer: "192.0.2.1")
        #expect(t.status == 400 && t.bodyText.contains("invalid_request"))
        #expect(send(w, "/_tokengate/auth", Self.nginx, peer: "192.0.2.1").status == 400)
        #expect(send(w, "/_tokengate/ext_authz/public/x", [], peer: "192.0.2.1").status == 400)
    }

    @Test func offMeansTheEndpointIsAnOrdinaryPath() throws {
        let w = try Self.worker(withDecision("{ enabled: false }"))
        #expect(send(w, "/_tokengate/forward-auth", Self.forwardAuth).status == 404)
        let one = try Self.worker(withDecision("{ forward_auth_path: \"off\" }"))
        #expect(send(one, "/_tokengate/forward-auth", Self.forwardAuth).status == 404)
        #expect(send(one, "/_tokengate/auth", Self.nginx).status == 200)
    }
}
