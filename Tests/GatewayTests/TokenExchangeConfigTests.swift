import Testing

@testable import Gateway
@testable import OAuth

/// `token_exchange:` in the config: what it builds, and every refusal check-config gives.
@Suite("Token exchange: config")
struct TokenExchangeConfigTests {
    static func yaml(_ route: String) -> String {
        """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        public_url: https://gw.example
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
          disc: { issuer: "https://idp.disc", discovery: true, audiences: [api] }
        clients:
          gw: { client_id: gw, auth: client_secret_basic, secret: "0123456789abcdef0123456789abcdef" }
          at-one: { issuer: one, client_id: gw, auth: client_secret_basic, secret: "0123456789abcdef0123456789abcdef" }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - match: { path: /api }
            upstream: app
        \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    func parse(_ route: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: Self.yaml(route), environment: [:], baseDirectory: "/", cores: 1)
    }

    func problems(_ route: String) -> [String] {
        if case .failure(let e) = parse(route) { return e.problems.map(\.description) }
        return []
    }

    @Test func anIDJAGExchangeNamesTheUpstreamsAS() throws {
        let cfg = try parse(
            """
            auth: token
            issuers: [one]
            token_exchange:
              mode: id_jag
              issuer: one
              client: gw
              endpoint: https://idp.one/token
              upstream_issuer: disc
              upstream_client: gw
              resource: https://files.internal/
            """
        ).get()
        let x = try #require(cfg.routes[0].options.auth.tokenRoute?.tokenExchange)
        #expect(x.upstream?.issuer == "disc" && x.upstream?.issuerURL == "https://idp.disc")
        #expect(x.target.requestedTokenType == TokenExchange.idJAGTokenType)
        #expect(x.target.audiences == ["https://idp.disc"] && x.target.resources == ["https://files.internal/"])
    }

    @Test func anIDJAGIsForOneResource() {
        let route = """
            auth: token
            issuers: [one]
            token_exchange:
              mode: id_jag
              issuer: one
              client: gw
              endpoint: https://idp.one/token
              upstream_issuer: disc
              upstream_client: gw
              resource: [https://a.internal/, https://b.internal/]
            """
        #expect(problems(route).contains { $0.contains("needs one resource") }, "\(problems(route))")
    }

    /// RFC 8414 §3.1: the upstream AS's metadata, when it publishes no OIDC discovery.
    @Test func theRFC8414MetadataURLPutsTheWellKnownPathBeforeTheIssuersPath() {
        #expect(
            IssuerKeys.rfc8414URL("https://as.example") == "https://as.example/.well-known/oauth-authorization-server")
        #expect(
            IssuerKeys.rfc8414URL("https://as.example/t/1/")
                == "https://as.example/.well-known/oauth-authorization-server/t/1")
    }

    @Test(arguments: [
        ("mode: sideways", "must be exchange or id_jag"),
        ("mode: id_jag", "needs upstream_issuer"),
        ("mode: id_jag\nupstream_issuer: nobody\nupstream_client: gw", "\"nobody\" is not defined"),
        ("mode: id_jag\nupstream_issuer: one\nupstream_client: gw", "needs discovery: true"),
        ("mode: id_jag\nupstream_issuer: disc", "needs upstream_client"),
        ("mode: id_jag\nupstream_issuer: disc\nupstream_client: nobody", "\"nobody\" is not defined"),
        ("mode: id_jag\nupstream_issuer: disc\nupstream_client: gw\naudience: x", "is set by mode: id_jag"),
        ("mode: id_jag\nupstream_issuer: disc\nupstream_client: gw\ndpop: true", "not available with mode: id_jag"),
        ("upstream_issuer: disc", "are for mode: id_jag"),
        ("mode: exchange\nupstream_issuer: disc", "are for mode: id_jag"),
        ("mode: id_jag\nupstream_issuer: disc\nupstream_client: at-one", "is registered at one, not at disc")
    ])
    func anIDJAGExchangeIsRefused(_ extra: String, _ why: String) {
        let route = """
            auth: token
            issuers: [one]
            token_exchange:
              issuer: one
              client: gw
              endpoint: https://idp.one/token
              resource: https://files.internal/
            """ + "\n" + extra.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
        #expect(problems(route).contains { $0.contains(why) }, "\(problems(route))")
    }

    @Test func theExchangeIsBuiltWithItsTarget() throws {
        let cfg = try parse(
            """
            auth: token
            issuers: [one]
            token_exchange:
              issuer: one
              client: gw
              endpoint: https://idp.one/token
              resource: [https://orders.internal/, https://billing.internal/]
              audience: orders-backend
              scope: "orders:read  orders:write"
              requested_token_type: jwt
              margin: 1m
              default_lifetime: 5m
              negative_ttl: 3s
              dpop: true
            """
        ).get()
        let x = try #require(cfg.routes[0].options.auth.tokenRoute?.tokenExchange)
        #expect(x.issuer == "one")
        #expect(x.issuerURL == "https://idp.one")
        #expect(x.client.authentication.clientID == "gw")
        #expect(x.endpoint == "https://idp.one/token")
        #expect(x.target.resources == ["https://orders.internal/", "https://billing.internal/"])
        #expect(x.target.audiences == ["orders-backend"])
        #expect(x.target.scope == "orders:read orders:write")
        #expect(x.target.requestedTokenType == TokenExchange.jwtTokenType)
        #expect(x.margin == 60 && x.defaultLifetime == 300 && x.negativeTTL == 3 && x.dpop)
        // From discovery: no endpoint needed.
        let discovered = try parse(
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, audience: backend }"
        ).get()
        let d = try #require(discovered.routes[0].options.auth.tokenRoute?.tokenExchange)
        #expect(d.endpoint == nil)
        #expect(d.target.requestedTokenType == TokenExchange.accessTokenType)
        #expect(d.margin == 30 && !d.dpop)
    }

    @Test(arguments: [
        (
            "auth: none\ntoken_exchange: { issuer: disc, client: gw, audience: b }",
            "routes[0].token_exchange: needs auth: bearer, dpop or token"
        ),
        (
            "auth: bearer\nissuers: [one]\nforward_token: true\ntoken_exchange: { issuer: disc, client: gw, audience: b }",
            "routes[0].forward_token: cannot be used with token_exchange"
        ),
        (
            "auth: dpop\nissuers: [one]\ndpop: { forward_proof: true }\ntoken_exchange: { issuer: disc, client: gw, audience: b }",
            "routes[0].dpop.forward_proof: cannot be used with token_exchange"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { client: gw, audience: b }",
            "routes[0].token_exchange: needs issuer"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: nope, client: gw, audience: b }",
            "routes[0].token_exchange.issuer: \"nope\" is not defined"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, audience: b }",
            "routes[0].token_exchange: needs client"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: nope, audience: b }",
            "routes[0].token_exchange.client: \"nope\" is not defined"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: one, client: gw, audience: b }",
            "routes[0].token_exchange: needs endpoint: URL (the issuer one has no discovery metadata"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, endpoint: ftp://x, audience: b }",
            "routes[0].token_exchange.endpoint: \"ftp://x\" is not an http(s) URL"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw }",
            "routes[0].token_exchange: needs resource"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, resource: \"https://a/#f\" }",
            "routes[0].token_exchange.resource[0]: \"https://a/#f\""
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, audience: \"\" }",
            "routes[0].token_exchange.audience: must not be empty"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, audience: b, scope: \"a\\\"b\" }",
            "routes[0].token_exchange.scope: must be space-separated scope tokens"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, audience: b, requested_token_type: id_token }",
            "routes[0].token_exchange.requested_token_type: must be access_token or jwt"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_exchange: { issuer: disc, client: gw, audience: b, scopes: x }",
            "routes[0].token_exchange.scopes: is not a known key; did you mean \"scope\"?"
        )
    ])
    func eachRefusalNamesItsKey(route: String, problem: String) {
        let found = problems(route)
        #expect(found.contains { $0.contains(problem) }, "\(found)")
    }
}
