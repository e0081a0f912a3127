import Foundation
import OAuth
import Testing

@testable import Gateway

/// The parser builds a route's `RouteAuth` directly, one case per `auth:` mode with
/// exactly that mode's settings.
@Suite("Route auth modes as parsed")
struct RouteAuthTests: ConfigParsing {
    /// Two IdPs with a login client each, and one route (`route`: its auth keys).
    func config(route: String) -> String {
        """
        public_url: https://gw.example.com
        session: { keys: ["${SK}"] }
        issuers:
          corp: { issuer: "https://idp.corp.example", discovery: true, audiences: [api] }
          partners: { issuer: "https://idp.partners.example", discovery: true, audiences: [api] }
        clients:
          web: { issuer: corp, client_id: web, secret: s3cret-s3cret-s3cret, scopes: [openid, email] }
          ext: { issuer: partners, client_id: ext, secret: s3cret-s3cret-s3cret, scopes: [openid, email] }
        upstreams: { a: { url: "http://127.0.0.1:9000" } }
        routes:
          - match: { path_prefix: /api }
            upstream: a
        \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    func auth(_ route: String) throws -> RouteAuth {
        try parse(config(route: route)).get().routes[0].options.auth
    }

    @Test func noneHasNoParts() throws {
        let a = try auth("auth: none")
        guard case .none = a else {
            Issue.record("auth: none parsed as \(a)")
            return
        }
        #expect(a.loginRoute == nil && a.tokenRoute == nil)
    }

    @Test func bearerIsATokenRouteWithoutDPoPOrLogin() throws {
        let a = try auth("auth: bearer\nissuers: [corp]\nrequire: { scopes: [read] }\nforward_token: true")
        guard case .tokens(let t) = a, case .bearer = t.schemes else {
            Issue.record("auth: bearer parsed as \(a)")
            return
        }
        #expect(t.issuers == ["corp"] && t.requirement.scopes == ["read"] && t.forwardToken)
        #expect(t.dpop == nil && t.schemes.acceptsBearer && !t.schemes.acceptsDPoP)
        #expect(a.loginRoute == nil)
    }

    @Test func dpopCarriesItsProofRules() throws {
        let a = try auth("auth: dpop\nissuers: [corp]\ndpop: { nonce: required }")
        guard case .tokens(let t) = a, case .dpop(let d) = t.schemes else {
            Issue.record("auth: dpop parsed as \(a)")
            return
        }
        #expect(d.nonceRequired && t.dpop?.nonceRequired == true)
        #expect(!t.schemes.acceptsBearer && t.schemes.acceptsDPoP && a.loginRoute == nil)
    }

    @Test func tokenAcceptsBothSchemes() throws {
        let a = try auth("auth: token\nissuers: [corp, partners]")
        guard case .tokens(let t) = a, case .bearerOrDPoP(let d) = t.schemes else {
            Issue.record("auth: token parsed as \(a)")
            return
        }
        #expect(t.issuers == ["corp", "partners"] && d.jktHeader == "X-Forwarded-Jkt")
        #expect(t.schemes.acceptsBearer && t.schemes.acceptsDPoP && a.loginRoute == nil)
    }

    @Test func loginCarriesItsClientsAndNoTokenPart() throws {
        let a = try auth(
            "auth: login\nclients: [ext, web]\nforward_token: true\nrequire: { clients: [web], scopes: [email] }")
        guard case .login(let l) = a else {
            Issue.record("auth: login parsed as \(a)")
            return
        }
        // The first listed client is the one a browser logs in with when it does not choose.
        #expect(l.clients == ["ext", "web"] && l.client == "ext")
        #expect(l.forwardSessionToken && l.sessionRequirement?.clients == ["web"])
        #expect(a.tokenRoute == nil)
        let single = try auth("auth: login\nclient: web")
        #expect(single.loginRoute?.clients == ["web"] && single.loginRoute?.forwardSessionToken == false)
        #expect(single.loginRoute?.sessionRequirement == nil)
    }

    @Test func loginOrTokenCarriesBoth() throws {
        let a = try auth(
            "auth: login_or_token\nclient: web\nissuers: [corp]\nrequire: { scopes: [read] }\nforward_token: true")
        guard case .loginOrToken(let l, let t) = a, case .bearerOrDPoP = t.schemes else {
            Issue.record("auth: login_or_token parsed as \(a)")
            return
        }
        #expect(l.client == "web" && t.issuers == ["corp"])
        // One requirement for both paths; forward_token is about the caller's own token here.
        #expect(l.sessionRequirement?.scopes == ["read"] && t.requirement.scopes == ["read"])
        #expect(t.forwardToken && !l.forwardSessionToken)
        #expect(a.loginRoute?.client == "web" && a.tokenRoute?.issuers == ["corp"])
        // pass_access_token sends the session's token.
        let passing = try auth("auth: login_or_token\nclient: web\nissuers: [corp]\npass_access_token: X-Access")
        #expect(passing.loginRoute?.forwardSessionToken == true && passing.tokenRoute?.forwardToken == false)
    }

    @Test func aLoginPartNeedsAClient() {
        #expect(LoginRouteConfig(clients: []) == nil)
        #expect(LoginRouteConfig(clients: ["web"])?.client == "web")
    }

    /// A part that failed to parse is left out (the config is refused anyway), and the
    /// messages about the route stay the ones of the mode as written.
    @Test func brokenPartsKeepTheirMessages() {
        let tokens = TokenRouteConfig(issuers: ["corp"])
        let login = LoginRouteConfig(clients: ["web"])
        if case .tokens = ConfigParser.routeAuth(.login_or_token, login: nil, tokens: tokens) {
        } else {
            Issue.record("login_or_token without a client should keep its token part")
        }
        if case .login = ConfigParser.routeAuth(.login_or_token, login: login, tokens: nil) {
        } else {
            Issue.record("login_or_token without issuers should keep its login part")
        }
        if case .none = ConfigParser.routeAuth(.bearer, login: nil, tokens: nil) {
        } else {
            Issue.record("bearer without issuers should fall back to none")
        }
        // An undefined client: the require and forward_token checks still run as for auth: login.
        let p = problems(
            config(
                route:
                    "auth: login\nclient: nobody\nforward_token: true\npass_access_token: X-A\nrequire: { clients: [web] }"
            ))
        #expect(p.contains("routes[0].client: \"nobody\" is not defined"))
        #expect(p.contains("routes[0].forward_token: give forward_token or pass_access_token, not both"))
        #expect(p.contains("routes[0].require.clients: web is not a login client of this route (clients: )"))
        // Issuers missing on login_or_token: close_at_token_expiry is reported as on a route without tokens.
        let q = problems(config(route: "auth: login_or_token\nclient: web\nclose_at_token_expiry: true"))
        #expect(q.contains("routes[0].issuers: auth: token needs issuers"))
        #expect(q.contains("routes[0].close_at_token_expiry: needs auth: bearer, dpop, token or login_or_token"))
    }
}
