import JOSE
import OAuth
import Testing

@testable import Gateway

@Suite("Config: provider presets (scope and role claims, audience rule, issuer spellings) and require.roles")
struct ProviderPresetTests {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/etc/tg", cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    func config(_ issuer: String, require: String = "{ roles: [admin] }") -> String {
        """
        issuers:
          idp: { \(issuer) }
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path_prefix: / }
            upstream: a
            auth: bearer
            issuers: [idp]
            require: \(require)
        """
    }

    func issuer(_ yaml: String) throws -> IssuerConfig {
        try #require(try parse(config(yaml)).get().issuers["idp"])
    }

    @Test func entraAndOktaReadScopesFromScp() throws {
        let entra = try issuer(
            "issuer: https://login.microsoftonline.com/t1/v2.0, discovery: true, audiences: [a], provider: entra")
        #expect(entra.scopeClaim == .scp && entra.effectiveRoleClaims == [ClaimPath("roles")!])
        let okta = try issuer(
            "issuer: https://acme.okta.com/oauth2/default, discovery: true, audiences: [a], provider: okta")
        #expect(okta.scopeClaim == .scp && okta.effectiveRoleClaims == [ClaimPath("groups")!])
    }

    @Test func keycloakRolesAreRealmAndEachAudiencesClientRoles() throws {
        let kc = try issuer(
            "issuer: https://kc.example/realms/acme, discovery: true, audiences: [orders, https://api.example], provider: keycloak"
        )
        #expect(
            kc.effectiveRoleClaims.map(\.components) == [
                ["realm_access", "roles"], ["resource_access", "orders", "roles"],
                ["resource_access", "https://api.example", "roles"]
            ])
        #expect(kc.scopeClaim == .scope && kc.audienceClaim == .aud)
    }

    @Test func auth0PermissionsAndCognito() throws {
        let auth0 = try issuer("issuer: https://acme.eu.auth0.com/, discovery: true, audiences: [a], provider: auth0")
        #expect(auth0.effectiveRoleClaims == [ClaimPath("permissions")!])
        let cognito = try issuer(
            "issuer: https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Abc, discovery: true, audiences: [app1], provider: cognito"
        )
        #expect(cognito.audienceClaim == .client_id && cognito.tokenUse == "access")
        #expect(cognito.effectiveRoleClaims == [ClaimPath("cognito:groups")!])
    }

    @Test func googleAcceptsBothSpellings() throws {
        let g = try issuer("issuer: https://accounts.google.com, discovery: true, audiences: [a], provider: google")
        #expect(g.issuerAliases == ["accounts.google.com"])
    }

    @Test func everyKeyOverridesThePreset() throws {
        let c = try issuer(
            "issuer: https://cognito-idp.eu-west-1.amazonaws.com/p, discovery: true, audiences: [a], provider: cognito, "
                + "audience_claim: aud, token_use: id, role_claims: [groups], scope_claim: scp")
        #expect(c.audienceClaim == .aud && c.tokenUse == "id" && c.scopeClaim == .scp)
        #expect(c.effectiveRoleClaims == [ClaimPath("groups")!])
        let g = try issuer(
            "issuer: https://accounts.google.com, discovery: true, audiences: [a], provider: google, issuer_aliases: []"
        )
        #expect(g.issuerAliases.isEmpty)
    }

    @Test func checkConfigSaysWhatThePresetSet() throws {
        let cfg = try parse(
            config(
                "issuer: https://cognito-idp.eu-west-1.amazonaws.com/p, discovery: true, audiences: [a], provider: cognito, scope_claim: scope"
            )
        ).get()
        let notes = cfg.presetNotes.joined(separator: "\n")
        #expect(notes.contains("issuers.idp (provider: cognito)"))
        #expect(notes.contains("audience_claim: client_id") && notes.contains("token_use: access"))
        #expect(notes.contains("role_claims: [cognito:groups]") && !notes.contains("scope_claim"))
        let entra = try parse(
            config(
                "issuer: https://login.microsoftonline.com/t1/v2.0, discovery: true, audiences: [a], provider: entra")
        ).get()
        #expect(entra.presetNotes.contains { $0.contains("accessTokenAcceptedVersion") })
        #expect(try parse(config("issuer: https://x, discovery: true, audiences: [a]")).get().presetNotes.isEmpty)
    }

    @Test func mistakesAreReported() {
        #expect(
            problems(config("issuer: https://x, discovery: true, audiences: [a], provider: ping")).contains(
                "issuers.idp.provider: \"ping\" is not one of entra, okta, auth0, keycloak, google, cognito"))
        #expect(
            problems(config("issuer: https://x, discovery: true, audiences: [a], audience_claim: azp")).contains(
                "must be aud (RFC 9068 §2.2, the default) or client_id"))
        #expect(
            problems(config("issuer: https://x, discovery: true, audiences: [a], role_claims: [\"a..b\"]")).contains(
                "is not a claim path"))
        #expect(
            problems(config("issuer: https://x, discovery: true, audiences: [a]", require: "{ roles: [] }")).contains(
                "require.roles: is empty"))
    }

    @Test func rolesAreForTokenRoutes() {
        let yaml = """
            issuers:
              idp: { issuer: https://x, discovery: true, audiences: [a] }
            clients:
              web: { issuer: idp, client_id: app, auth: client_secret_basic, secret: "0123456789abcdef0123456789abcdef" }
            session: { keys: ["\(String(repeating: "A", count: 43))"] }
            public_url: https://gw.example
            upstreams: { a: { url: "http://127.0.0.1:1" } }
            routes:
              - match: { path_prefix: / }
                upstream: a
                auth: login
                client: web
                require: { roles: [admin] }
            """
        #expect(problems(yaml).contains("require.roles: applies to tokens"))
    }
}

@Suite("require.roles and the audience rules of presets, on verified tokens")
struct RoleRequirementTests {
    static let now: Int64 = 1_800_000_000
    static let key = try! JWK.generate(for: .ES256, kid: "k1")

    static func token(_ claims: [String: JSONValue]) -> String {
        var c = JSONObject([
            "iss": .string("https://idp"), "sub": .string("alice"), "exp": .number(String(now + 300)),
            "iat": .number(String(now))
        ])
        for (k, v) in claims { c[k] = v }
        return try! JWSSigner.sign(claims: c, header: JSONObject(), alg: .ES256, key: key)
    }

    static func verify(_ policy: IssuerPolicy, _ t: String) -> Result<VerifiedAccessToken, AccessTokenVerifier.Failure>
    {
        AccessTokenVerifier(issuers: [policy]).verify(t, now: now, keys: { _ in JWKSet(keys: [key]) })
    }

    @Test func rolesAreReadFromTheIssuersRoleClaims() throws {
        var p = IssuerPolicy(name: "kc", issuer: "https://idp", algorithms: [.ES256], audiences: ["orders"])
        p.roleClaims = [
            ClaimPath("realm_access.roles")!, ClaimPath(components: ["resource_access", "orders", "roles"])!
        ]
        let t = try Self.verify(
            p,
            Self.token([
                "aud": .string("orders"), "realm_access": .object(JSONObject(["roles": .array([.string("user")])])),
                "resource_access": .object(
                    JSONObject(["orders": .object(JSONObject(["roles": .array([.string("admin")])]))]))
            ])
        ).get()
        var req = AuthorizationRequirement()
        req.roles = ["user", "admin"]
        #expect(req.check(t.claims, roleClaims: t.roleClaims) == nil)
        req.roles = ["admin", "owner"]
        #expect(req.check(t.claims, roleClaims: t.roleClaims) == .missingRoles(["owner"]))
        // `roles` itself is not read when the issuer says its roles are elsewhere.
        req.roles = ["user"]
        #expect(
            req.check(JSONObject(["roles": .array([.string("user")])]), roleClaims: t.roleClaims)
                == .missingRoles(["user"]))
    }

    @Test func cognitoAccessTokensAreCheckedByClientIdAndTokenUse() throws {
        var p = IssuerPolicy(name: "cognito", issuer: "https://idp", algorithms: [.ES256], audiences: ["app1"])
        p.audienceClaim = .client_id
        p.tokenUse = "access"
        _ = try Self.verify(p, Self.token(["client_id": .string("app1"), "token_use": .string("access")])).get()
        // Its ID token: aud is the app client, token_use id.
        guard
            case .failure(.rejected(let e)) = Self.verify(
                p, Self.token(["aud": .string("app1"), "token_use": .string("id")]))
        else {
            Issue.record("a Cognito ID token passed as an access token")
            return
        }
        #expect(e.code == .typeMismatch && e.claim == "token_use")
        guard
            case .failure(.rejected(let other)) = Self.verify(
                p, Self.token(["client_id": .string("app2"), "token_use": .string("access")]))
        else {
            Issue.record("another app client's token passed")
            return
        }
        #expect(other.code == .audienceMismatch)
        guard case .failure(.rejected(let none)) = Self.verify(p, Self.token(["token_use": .string("access")])) else {
            Issue.record("a token without client_id passed")
            return
        }
        #expect(none.code == .missingClaim && none.claim == "client_id")
    }
}
