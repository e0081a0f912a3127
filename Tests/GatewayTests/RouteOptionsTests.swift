import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway

@Suite("Route options, rules and cookie settings")
struct RouteOptionsTests: ConfigParsing {
    /// A config with `route` (indented as a list item's keys) and optional top-level extras.
    func config(route: String, top: String = "", session: String = "") -> String {
        """
        public_url: https://gw.example.com
        session: { keys: ["${SK}"] \(session) }
        \(top)
        issuers:
          corp: { issuer: "https://idp.example.com", discovery: true, audiences: [api] }
        clients:
          web: { issuer: corp, client_id: web, secret: s3cret-s3cret-s3cret, scopes: [openid, email] }
        upstreams: { a: { url: "http://127.0.0.1:9000/base" } }
        routes:
          - match: { path_prefix: /api }
            upstream: a
        \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    static let keyFile: String = {
        let path = NSTemporaryDirectory() + "tg-assert-\(getpid()).jwk"
        let key = try! JWK.generate(for: .ES256, kid: "a1")
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(JSONSerializer.serialize(.object(try! key.privateJWK())).utf8))
        return path
    }()

    // MARK: strip_prefix

    @Test func stripPrefixKeepsSegmentBoundaries() throws {
        var o = RouteOptions.Forwarding()
        o.strippedPrefix = "/api"
        #expect(o.forwardedPath("/api") == "/")
        #expect(o.forwardedPath("/api/") == "/")
        #expect(o.forwardedPath("/api/x/y") == "/x/y")
        let cfg = try parse(config(route: "auth: none\nstrip_prefix: true")).get()
        #expect(cfg.routes[0].options.forwarding.strippedPrefix == "/api")
        // A trailing-slash prefix strips the same segment.
        let slash = try parse(
            config(route: "auth: none\nstrip_prefix: true").replacingOccurrences(
                of: "path_prefix: /api", with: "path_prefix: /api/")
        ).get()
        #expect(slash.routes[0].options.forwarding.forwardedPath("/api/x") == "/x")
    }

    @Test func stripPrefixMisuse() {
        #expect(
            problems(
                config(route: "auth: none\nstrip_prefix: true").replacingOccurrences(
                    of: "path_prefix: /api", with: "path: /api")
            )
            .contains("needs match.path_prefix"))
        #expect(
            problems(
                config(route: "auth: none\nstrip_prefix: true").replacingOccurrences(
                    of: "path_prefix: /api", with: "path_prefix: /")
            )
            .contains("nothing to strip"))
    }

    // MARK: cors_preflight, tokens

    @Test func corsPreflightMisuse() throws {
        #expect(
            try parse(config(route: "auth: login\nclient: web\ncors_preflight: allow")).get().routes[0].options
                .cors.preflight)
        #expect(problems(config(route: "auth: none\ncors_preflight: allow")).contains("has no effect with auth: none"))
        #expect(problems(config(route: "auth: login\nclient: web\ncors_preflight: yes")).contains("must be allow"))
    }

    @Test func tokenHeaders() throws {
        let cfg = try parse(
            config(route: "auth: login\nclient: web\npass_access_token: X-Access-Token\npass_id_token: X-Id-Token")
        ).get()
        let r = cfg.routes[0]
        #expect(
            r.options.forwarding.passAccessToken == "X-Access-Token" && r.options.forwarding.passIDToken == "X-Id-Token"
                && r.options.auth.loginRoute?.forwardSessionToken == true)
        // Stripped from client requests on every route.
        let stripped = cfg.strippedIdentityHeaders.map { String(decoding: $0, as: UTF8.self) }
        #expect(
            stripped.contains("x-access-token") && stripped.contains("x-id-token")
                && stripped.contains("x-tokengate-assertion"))
        // forward_token: true is pass_access_token: Authorization.
        let fwd = try parse(config(route: "auth: login\nclient: web\nforward_token: true")).get()
        #expect(fwd.routes[0].options.forwarding.passAccessToken == "Authorization")
        #expect(!fwd.strippedIdentityHeaders.contains(Array("authorization".utf8)))
    }

    @Test func tokenHeaderMisuse() {
        #expect(
            problems(config(route: "auth: bearer\nissuers: [corp]\npass_access_token: X-T")).contains(
                "forward_token: true"))
        #expect(
            problems(config(route: "auth: login\nclient: web\npass_id_token: Cookie")).contains("pick another name"))
        #expect(
            problems(config(route: "auth: login\nclient: web\npass_id_token: Authorization")).contains(
                "pick another name"))
        #expect(
            problems(config(route: "auth: login\nclient: web\nforward_token: true\npass_access_token: X-T")).contains(
                "not both"))
        #expect(
            problems(config(route: "auth: login\nclient: web\nforward_token: false\npass_access_token: X-T")).isEmpty)
        #expect(
            problems(
                config(
                    route:
                        "auth: login\nclient: web\npass_id_token: X-Forwarded-Email\nheaders: { X-Forwarded-Email: email }"
                )
            )
            .contains("both an identity header"))
    }

    // MARK: identity_assertion

    @Test func identityAssertionDefaults() throws {
        let cfg = try parse(
            config(
                route: "auth: login\nclient: web\nidentity_assertion: {}",
                top: "identity_assertion_keys: [\(Self.keyFile)]")
        ).get()
        let a = try #require(cfg.routes[0].options.forwarding.identityAssertion)
        #expect(a.header == "X-Tokengate-Assertion" && a.lifetime == 60)
        #expect(a.audience == "http://127.0.0.1:9000/base" && a.issuer == "https://gw.example.com")
        #expect(cfg.assertionKeys.count == 1 && cfg.assertionKeys[0].alg == .ES256)
        let custom = try parse(
            config(
                route:
                    "auth: login\nclient: web\nidentity_assertion: { header: X-Who, lifetime: 2m, audience: orders }",
                top: "identity_assertion_keys: [\(Self.keyFile)]")
        ).get()
        let c = try #require(custom.routes[0].options.forwarding.identityAssertion)
        #expect(c.header == "X-Who" && c.lifetime == 120 && c.audience == "orders")
    }

    @Test func identityAssertionMisuse() {
        #expect(
            problems(config(route: "auth: login\nclient: web\nidentity_assertion: {}")).contains(
                "tokengate keys generate"))
        let keys = "identity_assertion_keys: [\(Self.keyFile)]"
        #expect(
            problems(config(route: "auth: login\nclient: web\nidentity_assertion: { lifetime: 2h }", top: keys))
                .contains("from 10s to 1h"))
        #expect(
            problems(config(route: "auth: none\nidentity_assertion: {}", top: keys)).contains("no caller to assert"))
        #expect(
            problems(config(route: "auth: none", top: "identity_assertion_keys: [\(Self.keyFile), \(Self.keyFile)]"))
                .contains("used by another key"))
        #expect(
            problems(
                config(route: "auth: login\nclient: web\nidentity_assertion: {}", top: keys)
                    .replacingOccurrences(of: "public_url: https://gw.example.com", with: "")
            ).contains("needs public_url"))
    }

    @Test func assertionsAreCachedPerCallerAndSigned() throws {
        let cfg = try parse(
            config(
                route: "auth: login\nclient: web\nidentity_assertion: {}\nheaders: { X-User: preferred_username }",
                top: "identity_assertion_keys: [\(Self.keyFile)]")
        ).get()
        let a = IdentityAssertions()
        a.apply(cfg)
        let route = cfg.routes[0]
        let claims = JSONObject([
            "sub": .string("alice"), "email": .string("a@example.com"), "preferred_username": .string("al")
        ])
        let first = try #require(a.header(route, caller: "s1", claims: claims, now: 1000))
        #expect(first.0 == "X-Tokengate-Assertion")
        // Reused until a quarter of its lifetime is left; another caller gets its own.
        #expect(a.header(route, caller: "s1", claims: claims, now: 1040)?.1 == first.1 && a.signatures == 1)
        #expect(a.header(route, caller: "s2", claims: claims, now: 1040)?.1 != first.1 && a.signatures == 2)
        #expect(a.header(route, caller: "s1", claims: claims, now: 1046)?.1 != first.1 && a.signatures == 3)
        // Changed claims (a refresh removed something): a new one at once.
        var fewer = claims
        fewer["email"] = nil
        _ = a.header(route, caller: "s2", claims: fewer, now: 1041)
        #expect(a.signatures == 4)
        // Never past the credential's own expiry (token routes).
        let short = try #require(a.header(route, caller: "t1", claims: claims, now: 1000, notAfter: 1010))
        #expect(try CompactJWS(short.1).claims()["exp"]?.int64 == 1010)
        let signed = a.signatures
        #expect(
            a.header(route, caller: "t1", claims: claims, now: 1009, notAfter: 1010)?.1 == short.1
                && a.signatures == signed)
        // It verifies with the published key, and says who and for whom.
        let jws = try CompactJWS(first.1)
        let keys = JWKSet(keys: cfg.assertionKeys.map(\.key))
        _ = try JWSVerifier(keys: try JWKSet(json: keys.publicJSON()), algorithms: [.ES256]).verify(jws)
        let body = try jws.claims()
        #expect(
            body["iss"] == .string("https://gw.example.com") && body["aud"] == .string("http://127.0.0.1:9000/base"))
        #expect(body["sub"] == .string("alice") && body["preferred_username"] == .string("al"))
        #expect(body["exp"]?.int64 == 1060 && body["iat"]?.int64 == 1000 && body["jti"]?.string?.isEmpty == false)
    }

    // MARK: rules

    @Test func emailDomains() throws {
        let req = try #require(
            parse(config(route: "auth: login\nclient: web\nrequire: { email_domains: [Example.com] }")).get().routes[0]
                .options.auth.loginRoute?.sessionRequirement)
        func check(_ email: String, verified: Bool = true) -> AuthorizationRequirement.Failure? {
            req.check(JSONObject(["email": .string(email), "email_verified": .bool(verified)]))
        }
        #expect(check("a@example.com") == nil && check("a@EXAMPLE.COM") == nil && check("a@eu.example.com") == nil)
        #expect(
            check("a@evil-example.com") != nil && check("a@example.com.evil.net") != nil
                && check("a@example.org") != nil)
        #expect(check("a@example.com", verified: false)?.description.contains("not verified") == true)
        #expect(req.check(JSONObject(["email": .string("a@example.com")])) != nil)
        #expect(req.claimNames.isSuperset(of: ["email", "email_verified"]))
        #expect(
            problems(config(route: "auth: login\nclient: web\nrequire: { email_domains: [\"@example.com\"] }"))
                .contains("bare domain"))
    }

    @Test func anyOf() throws {
        let req = try #require(
            parse(
                config(
                    route: """
                        auth: login
                        client: web
                        require:
                          any_of:
                            - { claims: { groups: { contains: admin } } }
                            - { email_domains: [example.com], claims: { team: ops } }
                        """)
            ).get().routes[0].options.auth.loginRoute?.sessionRequirement)
        #expect(req.check(JSONObject(["groups": .array([.string("admin")])])) == nil)
        #expect(
            req.check(
                JSONObject(["team": .string("ops"), "email": .string("x@example.com"), "email_verified": .bool(true)]))
                == nil)
        let failure = req.check(
            JSONObject(["team": .string("dev"), "email": .string("x@example.com"), "email_verified": .bool(true)]))
        #expect(failure?.description.contains("any_of") == true && failure?.description.contains("groups") == true)
        #expect(req.claimNames.isSuperset(of: ["groups", "team", "email"]))
        #expect(
            problems(config(route: "auth: login\nclient: web\nrequire: { any_of: [ { claims: { a: b } } ] }")).contains(
                "at least two"))
    }

    /// Finding 10: an alternative with no rules is always met; the whole any_of would be.
    @Test func anyOfRefusesEmptyAlternatives() {
        let empty = problems(
            config(route: "auth: login\nclient: web\nrequire: { any_of: [ {}, { scopes: [admin] } ] }"))
        #expect(empty.contains("routes[0].require.any_of[0]") && empty.contains("has no rules, so it is always met"))
        #expect(
            problems(
                config(route: "auth: login\nclient: web\nrequire: { any_of: [ { scopes: [admin] }, { scopes: [] } ] }")
            )
            .contains("any_of[1]: has no rules"))
        #expect(
            problems(
                config(route: "auth: login\nclient: web\nrequire: { any_of: [ { claims: {} }, { scopes: [a] } ] }")
            )
            .contains("any_of[0]: has no rules"))
        #expect(
            problems(config(route: "auth: login\nclient: web\nrequire: { any_of: [] }")).contains(
                "needs at least two alternatives"))
        #expect(
            problems(
                config(route: "auth: login\nclient: web\nrequire: { any_of: [ { scopes: [a] }, { scopes: [b] } ] }")
            ).isEmpty)
    }

    // MARK: cookies

    @Test func cookieDomainAndSameSite() throws {
        let cfg = try parse(
            config(route: "auth: login\nclient: web", session: ", cookie_domain: example.com, same_site: strict")
        ).get()
        #expect(cfg.session.cookieDomain == "example.com" && cfg.session.sameSite == .strict)
        let s = LoginSettings(cfg)
        #expect(s.sessionCookie == "__Secure-tokengate_session" && s.loginCookie == "__Host-tokengate_login")
        #expect(
            cfg.ownCookieNames.contains("__Secure-tokengate_session")
                && cfg.ownCookieNames.contains("__Secure-tokengate_session_1"))
        let line = Cookies(cookieHeaders: []).set(
            s.sessionCookie, "v", .init(secure: true, maxAge: 60, sameSite: s.sameSite, domain: s.cookieDomain))!
        #expect(
            line == [
                "__Secure-tokengate_session=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure; Domain=example.com"
            ])
        #expect(
            Cookies(cookieHeaders: []).clear("n", secure: true, domain: "example.com")[0].hasSuffix(
                "Domain=example.com"))
    }

    @Test func cookieMisuse() {
        #expect(
            problems(config(route: "auth: login\nclient: web", session: ", secure_cookie: false, same_site: none"))
                .contains("needs secure_cookie: true"))
        #expect(
            problems(config(route: "auth: login\nclient: web", session: ", same_site: loose")).contains(
                "lax (the default), strict or none"))
        #expect(
            problems(config(route: "auth: login\nclient: web", session: ", cookie_domain: .example.com")).contains(
                "without the leading dot"))
        #expect(
            problems(config(route: "auth: login\nclient: web", session: ", cookie_domain: 10.0.0.1")).contains(
                "not an IP address"))
        // public_url is https://gw.example.com: another domain would never get the cookie.
        #expect(
            problems(config(route: "auth: login\nclient: web", session: ", cookie_domain: example.org")).contains(
                "does not cover public_url https://gw.example.com"))
        #expect(problems(config(route: "auth: login\nclient: web", session: ", cookie_domain: gw.example.com")).isEmpty)
    }
}
