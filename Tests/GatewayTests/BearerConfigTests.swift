import Testing

@testable import Gateway

@Suite("Config: issuers and auth: bearer routes")
struct BearerConfigTests {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/etc/tg", cores: 2)
    }

    let base = """
        issuers:
          corp: { issuer: "https://idp.example.com/", discovery: true, audiences: [api], algorithms: [RS256], leeway: 10s, access_token_type: at+jwt }
          local: { issuer: "https://local", jwks_file: keys.jwks, audiences: [api] }
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path_prefix: /api/ }
            upstream: a
            auth: bearer
            issuers: [corp, local]
            require: { scopes: [read], claims: { tenant: acme, "realm.roles": { contains: admin }, level: { one_of: [1, 2] } } }
            headers: { X-User: sub }
          - match: { path_prefix: / }
            upstream: a
            auth: none
        """

    @Test func parsesIssuersAndBearerRoutes() throws {
        let cfg = try parse(base).get()
        let corp = try #require(cfg.issuers["corp"])
        #expect(
            corp.keys == .discovery && corp.algorithms == [.RS256] && corp.leeway == 10
                && corp.accessTokenType == "at+jwt")
        #expect(cfg.issuers["local"]?.keys == .jwksFile("/etc/tg/keys.jwks"))
        let bearer = try #require(cfg.routes[0].options.auth.tokenRoute)
        #expect(bearer.issuers == ["corp", "local"])
        #expect(bearer.requirement.scopes == ["read"] && bearer.requirement.claims.count == 3)
        #expect(cfg.routes[0].options.forwarding.identityHeaders.headerNames == ["X-User"])
        // Every route's identity headers, and the defaults, are stripped everywhere.
        let stripped = cfg.strippedIdentityHeaders.map { String(decoding: $0, as: UTF8.self) }
        #expect(stripped.contains("x-user") && stripped.contains("x-forwarded-user"))
    }

    @Test func unknownKidWaitIsPerIssuerAndBounded() throws {
        let cfg = try parse(base.replacingOccurrences(of: "leeway: 10s", with: "leeway: 10s, unknown_kid_wait: 250ms"))
            .get()
        #expect(cfg.issuers["corp"]?.unknownKidWait == 0.25)
        #expect(cfg.issuers["local"]?.unknownKidWait == IssuerKeyResolver.defaultRefetchWait)
        #expect(
            problems(base.replacingOccurrences(of: "leeway: 10s", with: "unknown_kid_wait: 11s")).contains(
                "issuers.corp.unknown_kid_wait: at most 10s"))
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    @Test func mistakesAreReported() {
        #expect(
            problems(base.replacingOccurrences(of: "issuers: [corp, local]", with: "issuers: [crop]")).contains(
                "routes[0].issuers[0]: \"crop\" is not defined; defined: corp, local"))
        #expect(
            problems(base.replacingOccurrences(of: "discovery: true, audiences: [api]", with: "discovery: true"))
                .contains("issuers.corp.audiences: is required"))
        #expect(
            problems(base.replacingOccurrences(of: "algorithms: [RS256]", with: "algorithms: [HS256]")).contains(
                "HS* algorithms need a shared secret"))
        #expect(
            problems(
                base.replacingOccurrences(of: "discovery: true,", with: "discovery: true, jwks_uri: \"https://x/j\",")
            ).contains("exactly one of"))
        #expect(
            problems(base.replacingOccurrences(of: "    issuers: [corp, local]\n", with: "")).contains(
                "auth: bearer needs issuers"))
        #expect(
            problems(base.replacingOccurrences(of: "headers: { X-User: sub }", with: "headers: { Host: sub }"))
                .contains("cannot carry identity"))
        #expect(problems(base + "\n    issuers: [corp]\n").contains("has no effect with auth: none"))
        #expect(
            problems(base.replacingOccurrences(of: "auth: bearer", with: "auth: login")).contains(
                "auth: login needs client: NAME"))
    }
}
