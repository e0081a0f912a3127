import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway

/// Review findings 6 and 9: routes that accept several IdPs (require.issuers / require.clients,
/// the assertion's idp and client, check-config warnings), and cookie_domain's warning and refusal.
@Suite("Identity scoping across IdPs, and cookie_domain warnings")
struct IdentityScopingTests: ConfigParsing {
    func warnings(_ yaml: String) throws -> String {
        try parse(yaml).get().warnings.map(\.description).joined(separator: "\n")
    }

    /// Two IdPs, a login client on each, and one route (`route`, as a list item's keys).
    func config(route: String, session: String = "", top: String = "") -> String {
        """
        public_url: https://gw.example.com
        session: { keys: ["${SK}"] \(session) }
        \(top)
        issuers:
          corp: { issuer: "https://idp.corp.example", discovery: true, audiences: [api] }
          partners: { issuer: "https://idp.partners.example", discovery: true, audiences: [api] }
        clients:
          web: { issuer: corp, client_id: web, secret: s3cret-s3cret-s3cret, scopes: [openid, email] }
          ext: { issuer: partners, client_id: ext, secret: s3cret-s3cret-s3cret, scopes: [openid, email] }
        upstreams: { a: { url: "http://127.0.0.1:9000/base" } }
        routes:
          - match: { path_prefix: /api }
            upstream: a
        \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    @Test func requireClientsAndIssuersScopeTheRules() throws {
        let req = try #require(
            parse(
                config(
                    route: """
                        auth: login
                        clients: [web, ext]
                        require:
                          any_of:
                            - { clients: [web], claims: { groups: { contains: admin } } }
                            - { issuers: [partners], email_domains: [partner.example.net] }
                        """)
            ).get().routes[0].options.auth.loginRoute?.sessionRequirement)
        let admin = JSONObject(["groups": .array([.string("admin")])])
        #expect(req.check(admin, issuer: "corp", client: "web") == nil)
        // The same claims minted by the partner IdP do not make an admin.
        let failure = req.check(admin, issuer: "partners", client: "ext")
        #expect(failure?.description.contains("vouched for by client ext") == true)
        let partner = JSONObject(["email": .string("p@partner.example.net"), "email_verified": .bool(true)])
        #expect(req.check(partner, issuer: "partners", client: "ext") == nil)
        #expect(req.check(partner, issuer: "corp", client: "web") != nil)
        #expect(req.isScoped)
        // A token never meets clients.
        var tokenOnly = AuthorizationRequirement()
        tokenOnly.clients = ["web"]
        #expect(tokenOnly.check(admin, issuer: "corp") == .vouchedBy("no login client"))
    }

    @Test func requireNamesMustBeTheRoutes() {
        #expect(
            problems(config(route: "auth: login\nclients: [web]\nrequire: { clients: [ext] }"))
                .contains("routes[0].require.clients: ext is not a login client of this route (clients: web)"))
        #expect(
            problems(config(route: "auth: bearer\nissuers: [corp]\nrequire: { issuers: [partners] }"))
                .contains("routes[0].require.issuers: partners is not an issuer this route accepts"))
        #expect(
            problems(
                config(
                    route:
                        "auth: bearer\nissuers: [corp]\nrequire: { any_of: [ { issuers: [nope] }, { scopes: [a] } ] }")
            )
            .contains("routes[0].require.any_of[0].issuers: nope is not an issuer"))
        #expect(
            problems(config(route: "auth: login\nclients: [web]\nrequire: { clients: [] }")).contains(
                "require.clients: is empty"))
        #expect(
            problems(config(route: "auth: bearer\nissuers: [corp, partners]\nrequire: { issuers: [corp, partners] }"))
                .isEmpty)
    }

    @Test func checkConfigWarnsAboutUnscopedRulesOnMixedRoutes() throws {
        let mixed = try warnings(
            config(route: "auth: login\nclients: [web, ext]\nrequire: { claims: { groups: { contains: admin } } }"))
        #expect(
            mixed.contains(
                "routes[0].require: this route accepts callers from clients web, ext, and its require rules are met by a user of any of them"
            ))
        let tokens = try warnings(config(route: "auth: bearer\nissuers: [corp, partners]\nrequire: { scopes: [a] }"))
        #expect(tokens.contains("accepts callers from issuers corp, partners"))
        // Scoped rules, or a route with one IdP: no warning.
        #expect(
            try warnings(
                config(
                    route:
                        "auth: login\nclients: [web, ext]\nrequire: { clients: [web], claims: { groups: { contains: admin } } }"
                )
            ).isEmpty)
        #expect(
            try warnings(
                config(route: "auth: login\nclients: [web]\nrequire: { claims: { groups: { contains: admin } } }")
            ).isEmpty)
        #expect(
            try warnings(
                config(
                    route: """
                        auth: login
                        clients: [web, ext]
                        require: { any_of: [ { clients: [web], scopes: [a] }, { scopes: [b] } ] }
                        """)
            ).contains("routes[0].require:"))
    }

    @Test func assertionCarriesIdpAndClient() throws {
        let cfg = try parse(
            config(
                route: "auth: login\nclients: [web, ext]\nidentity_assertion: {}",
                top: "identity_assertion_keys: [\(RouteOptionsTests.keyFile)]")
        ).get()
        #expect(
            cfg.warnings.map(\.description).joined().contains(
                "routes[0].identity_assertion: this route accepts callers from clients web, ext"))
        let a = IdentityAssertions()
        a.apply(cfg)
        // A claim of the same name from the IdP never replaces them.
        let claims = JSONObject([
            "sub": .string("alice"), "idp": .string("https://idp.corp.example"), "client": .string("web")
        ])
        let h = try #require(
            a.header(
                cfg.routes[0], caller: "s1", claims: claims, now: 1000, idp: "https://idp.partners.example",
                client: "ext"))
        let body = try CompactJWS(h.1).claims()
        #expect(
            body["idp"] == .string("https://idp.partners.example") && body["client"] == .string("ext")
                && body["sub"] == .string("alice"))
    }

    @Test func cookieDomainWarnsAndNeedsSecureCookies() throws {
        let w = try warnings(config(route: "auth: login\nclient: web", session: ", cookie_domain: example.com"))
        #expect(w.contains("session.cookie_domain: every host under example.com receives the sealed session cookie"))
        #expect(w.contains("can set or shadow it") && w.contains("leave cookie_domain out (host-only __Host- cookie)"))
        #expect(try warnings(config(route: "auth: login\nclient: web")).isEmpty)
        #expect(
            problems(
                config(route: "auth: login\nclient: web", session: ", cookie_domain: example.com, secure_cookie: false")
            )
            .contains("session.cookie_domain: needs secure_cookie: true"))
    }
}
