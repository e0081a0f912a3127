import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import OAuth
@testable import Reactor

/// A route's `resource` (RFC 8707): how it is configured and refused, the RFC 9728 documents
/// built from it, and — without sockets — the document served before routing and the
/// challenges that name it.
@Suite("Protected resources: config, metadata documents, challenges")
struct ProtectedResourceConfigTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        public_url: https://gw.example.com
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api, "https://gw.example.com/mcp"] }
          two: { issuer: "https://idp.two/", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: mcp
            match: { path: /mcp }
            upstream: app
            auth: bearer
            issuers: [one, two]
            token_in_query: true
            require: { scopes: [mcp:tools], any_of: [{ scopes: [mcp:admin] }, { scopes: [mcp:tools, mcp:read] }] }
            resource: https://gw.example.com/mcp
            resource_name: Example MCP
            resource_documentation: "https://docs.example.com/mcp?lang=en#auth"
          - name: pay
            match: { path_prefix: /pay/ }
            upstream: app
            auth: dpop
            issuers: [one]
            dpop: { algorithms: [ES256, PS256] }
            resource: https://gw.example.com/
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
        """

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
    }

    func problems(_ yaml: String) -> [String] {
        if case .failure(let e) = parse(yaml) { return e.problems.map(\.description) }
        return []
    }

    @Test func documentsAreBuiltFromEachRoutesSettings() throws {
        let cfg = try parse(Self.yaml).get()
        #expect(
            cfg.protectedResources.keys.sorted() == [
                "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"
            ])
        let mcp = try #require(cfg.protectedResources["/.well-known/oauth-protected-resource/mcp"]?.metadata)
        #expect(mcp.resource.uri == "https://gw.example.com/mcp")
        // The issuer identifiers as configured (RFC 8414 §2: compared exactly by clients).
        #expect(mcp.authorizationServers == ["https://idp.one", "https://idp.two/"])
        #expect(mcp.scopesSupported == ["mcp:tools", "mcp:admin", "mcp:read"])
        #expect(mcp.bearerMethodsSupported == ["header", "query"])
        #expect(mcp.dpopSigningAlgValuesSupported == nil && mcp.dpopBoundAccessTokensRequired == nil)
        #expect(
            mcp.resourceName == "Example MCP"
                && mcp.resourceDocumentation == "https://docs.example.com/mcp?lang=en#auth")
        let pay = try #require(cfg.protectedResources["/.well-known/oauth-protected-resource"]?.metadata)
        #expect(pay.dpopSigningAlgValuesSupported == ["ES256", "PS256"] && pay.dpopBoundAccessTokensRequired == true)
        #expect(pay.scopesSupported.isEmpty)
        #expect(cfg.routes[2].options.auth.tokenRoute?.resource == nil)
    }

    @Test func noAdviceToAddTheResourceToTheIssuersAudiences() throws {
        // Listed there, it would open the issuer's other routes; it is an audience of its own
        // route whether listed or not (RouteAudiences).
        let cfg = try parse(Self.yaml).get()
        #expect(!cfg.warnings.contains { $0.description.contains("audiences") })
    }

    func token(issuer: String, aud: JSONValue) -> VerifiedAccessToken {
        VerifiedAccessToken(issuer: issuer, claims: JSONObject(["aud": aud]), expiresAt: 0, confirmation: nil)
    }

    @Test func aResourceIsAnAudienceOnItsOwnRouteOnly() throws {
        let cfg = try parse(Self.yaml).get()
        let resources = Set(RouteAudiences.resources(of: cfg).values.joined())
        #expect(resources == ["https://gw.example.com/mcp", "https://gw.example.com/"])
        func audiences(_ index: Int) throws -> RouteAudiences {
            RouteAudiences(
                route: try #require(cfg.routes[index].options.auth.tokenRoute), config: cfg, resources: resources)
        }
        let mcp = try audiences(0)
        let api = try audiences(2)
        let bound = token(issuer: "one", aud: .string("https://gw.example.com/mcp"))
        // On its route (whose resource rule then requires it), and nowhere else, though issuer
        // one lists it among its audiences.
        #expect(mcp.admits(bound))
        #expect(!api.admits(bound))
        #expect(!api.admits(token(issuer: "one", aud: .array([.string("https://gw.example.com/")]))))
        #expect(api.admits(token(issuer: "one", aud: .array([.string("https://gw.example.com/mcp"), .string("api")]))))
        #expect(api.admits(token(issuer: "one", aud: .string("api"))))
        // An issuer's audience is its own: two's tokens are held to two's.
        #expect(!api.admits(token(issuer: "two", aud: .string("api"))))
        // An introspection answer may carry no aud (RFC 7662 §2.2): the issuer's check let it in.
        #expect(api.admits(VerifiedAccessToken(issuer: "one", claims: JSONObject(), expiresAt: 0, confirmation: nil)))
    }

    @Test(arguments: [
        (
            "http://gw.example.com/mcp",
            "routes[0].resource: \"http://gw.example.com/mcp\" may use http only with a loopback host"
        ),
        (
            "https://gw.example.com/mcp#x",
            "routes[0].resource: \"https://gw.example.com/mcp#x\" must not have a fragment"
        ),
        ("mcp", "routes[0].resource: \"mcp\" must be an absolute URL"),
        ("https://gw.example.com/%7Emcp", "routes[0].resource: \"https://gw.example.com/%7Emcp\" has a path")
    ])
    func badResourcesAreRefusedAtTheirKey(resource: String, problem: String) {
        let yaml = Self.yaml.replacingOccurrences(
            of: "resource: https://gw.example.com/mcp", with: "resource: \"\(resource)\"")
        let p = problems(yaml)
        #expect(p.contains { $0.contains(problem) }, "\(p)")
    }

    @Test func oneMetadataPathServesOneDocument() {
        // Same path, another host: one document path, two contents.
        let clash = Self.yaml.replacingOccurrences(
            of: "resource: https://gw.example.com/\n", with: "resource: https://other.example.com/mcp\n")
        #expect(
            problems(clash).contains {
                $0.contains(
                    "routes[1].resource: pay and mcp both serve metadata at /.well-known/oauth-protected-resource/mcp")
            }, "\(problems(clash))")
    }

    @Test func resourceKeysBelongToTokenRoutes() {
        let onLogin = Self.yaml.replacingOccurrences(
            of: "issuers: [one]\n    resource_name", with: "issuers: [one]\n    resource_name"
        )
        .replacingOccurrences(
            of:
                "  - name: api\n    match: { path_prefix: /api/ }\n    upstream: app\n    auth: bearer\n    issuers: [one]",
            with:
                "  - name: api\n    match: { path_prefix: /api/ }\n    upstream: app\n    auth: none\n    resource: https://gw.example.com/api\n    resource_name: x"
        )
        let p = problems(onLogin)
        #expect(p.contains { $0.contains("routes[2].resource: has no effect with auth: none") }, "\(p)")
        #expect(p.contains { $0.contains("routes[2].resource_name: has no effect with auth: none") }, "\(p)")
        let orphan = Self.yaml.replacingOccurrences(
            of: "    resource: https://gw.example.com/\n", with: "    resource_name: pay\n")
        #expect(problems(orphan).contains { $0.contains("routes[1].resource_name: needs resource") })
        let badDoc = Self.yaml.replacingOccurrences(
            of: "\"https://docs.example.com/mcp?lang=en#auth\"", with: "ftp://docs")
        #expect(problems(badDoc).contains { $0.contains("routes[0].resource_documentation") })
    }

    // MARK: without sockets

    func send(_ w: Worker, _ method: String, _ target: String, _ fields: [(name: String, value: String)] = [])
        -> InMemoryTransport
    {
        let (exchange, transport) = InMemoryTransport.exchange(
            method, target, fields: [("Host", "gw.example.com")] + fields)
        w.handle(exchange)
        return transport
    }

    @Test func theDocumentIsServedBeforeRoutingWithoutAToken() throws {
        let w = try testWorker(Self.yaml)
        let t = send(w, "GET", "/.well-known/oauth-protected-resource/mcp", [("Authorization", "Bearer junk")])
        #expect(t.status == 200 && t.ended)
        #expect(t.head?.fields.first("Content-Type") == "application/json")
        #expect(t.head?.fields.first("Access-Control-Allow-Origin") == "*")
        #expect(t.head?.fields.first("Cache-Control") == "max-age=300, s-maxage=300")
        let doc = try JSONParser.parse(t.body).object
        #expect(doc?["resource"] == .string("https://gw.example.com/mcp"))
        #expect(send(w, "GET", "/.well-known/oauth-protected-resource").status == 200)
        #expect(send(w, "POST", "/.well-known/oauth-protected-resource/mcp").status == 405)
        #expect(send(w, "OPTIONS", "/.well-known/oauth-protected-resource/mcp").status == 204)
        // No document for a route without a resource: routed like any path (here: nowhere).
        #expect(send(w, "GET", "/.well-known/oauth-protected-resource/api").status == 404)
        #expect([400, 404].contains(send(w, "GET", "/.well-known/oauth-protected-resource/mcp/../api").status))
    }

    @Test func everyChallengeOfTheRouteNamesTheDocumentAndItsScopes() throws {
        let w = try testWorker(Self.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: w)
        let metadata = "resource_metadata=\"https://gw.example.com/.well-known/oauth-protected-resource/mcp\""
        let bare = send(w, "GET", "/mcp")
        #expect(bare.status == 401)
        #expect(
            bare.head?.fields.first("WWW-Authenticate")
                == "Bearer realm=\"tokengate\", scope=\"mcp:tools\", \(metadata)")
        let now = Int64(Date().timeIntervalSince1970)
        let forAPI = try testAccessToken(key: key, now: now)
        let refused = send(w, "GET", "/mcp", [("Authorization", "Bearer \(forAPI)")])
        #expect(refused.status == 401)
        let challenge = refused.head?.fields.first("WWW-Authenticate") ?? ""
        #expect(challenge.contains("error=\"invalid_token\"") && challenge.contains(metadata))
        #expect(challenge.contains("does not include this resource, https://gw.example.com/mcp"))
        let noScope = try testAccessToken(key: key, now: now, extra: ["aud": .string("https://gw.example.com/mcp")])
        let forbidden = send(w, "GET", "/mcp", [("Authorization", "Bearer \(noScope)")])
        #expect(forbidden.status == 403)
        let c403 = forbidden.head?.fields.first("WWW-Authenticate") ?? ""
        #expect(c403.contains("error=\"insufficient_scope\"") && c403.contains(metadata))
        // A route without a resource keeps its challenge as it was.
        #expect(send(w, "GET", "/api/x").head?.fields.first("WWW-Authenticate") == "Bearer realm=\"tokengate\"")
    }

    @Test func decisionModeLetsTheDocumentThroughOnlyUnderItsOwnPath() throws {
        let yaml = Self.yaml.replacingOccurrences(
            of: "public_url: https://gw.example.com\n",
            with: "public_url: https://gw.example.com\ntrusted_proxies: [10.0.0.0/8]\ndecision: {}\n")
        let w = try testWorker(yaml)
        #expect(askForwardAuth(w, "/.well-known/oauth-protected-resource/mcp", []).status == 200)
        let tricked = askForwardAuth(w, "/x/../.well-known/oauth-protected-resource/mcp", [])
        #expect(tricked.status == 400)
        #expect(tricked.bodyText.contains("protected resource metadata is allowed only under its own path"))
        let refused = askForwardAuth(w, "/mcp", [])
        #expect(refused.status == 401)
        #expect(refused.head?.fields.first("WWW-Authenticate")?.contains("resource_metadata=") == true)
    }
}
