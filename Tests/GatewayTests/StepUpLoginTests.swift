import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// Step-up on login routes (RFC 9470 §4, OIDC Core §3.1.2.1): which sessions meet a route's
/// `acr` / `max_age`, what a session short of them is answered, what the new login asks the
/// AS, and what its callback requires of the ID token. Driven through a worker's decision
/// endpoint with a manual clock (`SessionTimeTests.Harness`).
@Suite("Step-up on login routes", .serialized)
struct StepUpLoginTests {
    static let yaml = SessionTimeTests.yaml + "\n    require: { acr: [mfa, phr], max_age: 300 }\n"

    static func session(_ h: SessionTimeTests.Harness, acr: String?, authTime: Int64?) throws -> String {
        var claims = JSONObject()
        claims["sub"] = .string("alice")
        if let acr { claims["acr"] = .string(acr) }
        if let authTime { claims["auth_time"] = .number(String(authTime)) }
        let s = Session(
            id: Session.newID(), client: "web", subject: "alice", claims: claims, idToken: nil, accessToken: "at1",
            refreshToken: nil, accessExpiresAt: h.now + 3600, createdAt: h.now, lastSeenAt: h.now)
        var sealed: String?
        h.login.store.save(s, expiresAt: h.now + 8 * 3600, creating: true) { sealed = try? $0.get() }
        return try #require(sealed)
    }

    /// The forward-auth question for `/page` with the session, as a browser's navigation or
    /// as an API call.
    static func ask(_ h: SessionTimeTests.Harness, _ cookie: String, navigation: Bool) -> InMemoryTransport {
        let fields: [(name: String, value: String)] = [
            ("Accept", navigation ? "text/html" : "application/json"),
            ("Cookie", "\(h.login.settings.sessionCookie)=\(cookie)")
        ]
        let t = askForwardAuth(h.worker, host: "app.example", "/page", fields)
        if !t.ended { h.worker.loop.run { t.ended } }
        return t
    }

    /// The query of `url`, decoded as a form (`+` is a space).
    static func query(_ url: String) -> [String: String] {
        let q = url.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        return Dictionary((FormEncoding.decode(q) ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
    }

    @Test func aSessionThatMeetsTheRequirementGoesStraightThrough() throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        for acr in ["mfa", "phr"] {
            let cookie = try Self.session(h, acr: acr, authTime: h.now - 300)
            #expect(Self.ask(h, cookie, navigation: true).status == 200)
            #expect(Self.ask(h, cookie, navigation: false).status == 200)
        }
        #expect(h.idp.hits("/token") == 0)
    }

    /// Each shortfall: an API call gets what a call without a session gets (401
    /// `login_required`), a navigation the login URL that asks for the step-up.
    @Test(arguments: [
        ("pwd", Int64(0)), ("", Int64(0)), ("mfa", Int64(-331)), ("mfa", Int64.min)
    ])
    func aSessionShortOfTheRequirementLogsInAgain(acr: String, age: Int64) throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        let cookie = try Self.session(
            h, acr: acr.isEmpty ? nil : acr, authTime: age == .min ? nil : h.now + age)
        let api = Self.ask(h, cookie, navigation: false)
        #expect(api.status == 401)
        #expect(api.bodyText.contains("login_required"), "\(api.bodyText)")
        let page = Self.ask(h, cookie, navigation: true)
        #expect(page.status == 302)
        let location = try #require(page.head?.fields.first("Location"))
        #expect(location.hasPrefix("https://app.example/oauth2/start?"))
        let q = Self.query(location)
        #expect(q["rd"] == "https://app.example/page")
        #expect(q["client"] == "web")
        #expect(q["acr_values"] == "mfa phr")
        #expect(q["max_age"] == "300")
    }

    /// `login_or_token`: with a session cookie the session decides, as on `auth: login`.
    @Test func aLoginOrTokenRouteStepsUpItsSessions() throws {
        let yaml = Self.yaml.replacingOccurrences(
            of: "    auth: login\n", with: "    auth: login_or_token\n    issuers: [corp]\n")
        #expect(yaml.contains("login_or_token"))
        let h = try SessionTimeTests.Harness(yaml: yaml)
        #expect(Self.ask(h, try Self.session(h, acr: "mfa", authTime: h.now), navigation: false).status == 200)
        let short = try Self.session(h, acr: "pwd", authTime: h.now)
        #expect(Self.ask(h, short, navigation: false).status == 401)
        let page = Self.ask(h, short, navigation: true)
        #expect(page.status == 302)
        #expect(Self.query(page.head?.fields.first("Location") ?? "")["acr_values"] == "mfa phr")
    }

    /// `max_age` plus the issuer's leeway (30 s here), as the callback reads it.
    @Test func aSessionMeetsMaxAgeUntilItPasses() throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        let cookie = try Self.session(h, acr: "mfa", authTime: h.now)
        h.clock.advance(330)
        let fresh = Self.ask(h, cookie, navigation: false)
        #expect(fresh.status == 200)
        h.clock.advance(1)
        #expect(Self.ask(h, h.newSession(fresh) ?? cookie, navigation: false).status == 401)
    }

    /// `max_age: 1`, shorter than a login takes: the session a step-up login just made (the
    /// user authenticated 2 s before the callback) passes for the leeway the callback took it
    /// with, instead of sending the browser straight back to log in again, endlessly.
    @Test func aMaxAgeShorterThanALoginAdmitsTheLoginJustMade() throws {
        let yaml = Self.yaml.replacingOccurrences(of: "max_age: 300", with: "max_age: 1")
        #expect(yaml.contains("max_age: 1 }"))
        let h = try SessionTimeTests.Harness(yaml: yaml)
        let cookie = try Self.session(h, acr: "mfa", authTime: h.now - 2)
        let fresh = Self.ask(h, cookie, navigation: true)
        #expect(fresh.status == 200)
        h.clock.advance(30)
        #expect(Self.ask(h, h.newSession(fresh) ?? cookie, navigation: true).status == 302)
    }

    /// The start endpoint asks the AS what its query names: `acr_values` in order and
    /// `max_age`, beside the other parameters (here plain ones: `request_mode: plain`).
    @Test func theStartEndpointAsksTheAuthorizationServerForTheStepUp() throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        let t = Self.start(h, "/oauth2/start?rd=/page&client=web&acr_values=phr%20mfa&max_age=60")
        #expect(t.status == 302)
        let q = Self.query(try #require(t.head?.fields.first("Location")))
        #expect(q["acr_values"] == "phr mfa")
        #expect(q["max_age"] == "60")
        #expect(q["state"] != nil && q["nonce"] != nil)
        // A first login asks neither.
        let first = Self.query(try #require(Self.start(h, "/oauth2/start?rd=/page").head?.fields.first("Location")))
        #expect(first["acr_values"] == nil && first["max_age"] == nil)
    }

    @Test(arguments: [
        "acr_values=", "acr_values=a%22b", "max_age=-1", "max_age=1.5", "max_age=99999999999", "max_age=",
        "acr_values=mfa&acr_values=phr", "max_age=1&max_age=2",
        "acr_values=" + String(repeating: "a", count: 513),
        "acr_values=" + Array(repeating: "a", count: 11).joined(separator: "+")
    ])
    func theStartEndpointRefusesAMalformedStepUp(_ bad: String) throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        let t = Self.start(h, "/oauth2/start?rd=/page&" + bad)
        #expect(t.status == 400)
        #expect(t.head?.fields.first("Location") == nil)
    }

    static func start(_ h: SessionTimeTests.Harness, _ target: String) -> InMemoryTransport {
        let (exchange, t) = InMemoryTransport.exchange(
            "GET", target, fields: [("Host", "app.example"), ("Accept", "text/html")], peer: "10.1.2.3")
        h.worker.handle(exchange)
        if !t.ended { h.worker.loop.run { t.ended } }
        return t
    }

    /// A step-up route's session keeps `acr` and `auth_time` (the claims its requirement reads).
    @Test func theSessionKeepsTheAuthenticationClaims() throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        var idClaims = JSONObject()
        idClaims["sub"] = .string("alice")
        idClaims["acr"] = .string("mfa")
        idClaims["auth_time"] = .number("1000")
        idClaims["amr"] = .array([.string("otp")])
        let tokens = try TokenResponse.parse(
            status: 200, body: Array(#"{"access_token":"a","token_type":"Bearer"}"#.utf8)
        ).get()
        let kept = h.login.sessionClaims(idClaims, tokens, try #require(h.worker.config.clients["web"]))
        #expect(kept["acr"] == .string("mfa"))
        #expect(kept["auth_time"] == .number("1000"))
        #expect(kept["amr"] == nil, "no route reads amr")
    }
}

/// The pending login remembers what a step-up asked; its callback checks the ID token.
@Suite("Step-up: the pending login and the ID token check")
struct StepUpPendingLoginTests {
    static func login(acr: [String] = [], maxAge: Int? = nil) -> PendingLogins.Login {
        .init(
            state: "s", nonce: "n", codeVerifier: "v", returnTo: "/", client: "web", createdAt: 1000,
            acrValues: acr, maxAge: maxAge)
    }

    static func claims(acr: String?, authTime: Int64?) -> JSONObject {
        var c = JSONObject()
        if let acr { c["acr"] = .string(acr) }
        if let authTime { c["auth_time"] = .number(String(authTime)) }
        return c
    }

    @Test func whatWasAskedSurvivesTheCookieAndRedis() throws {
        var p = PendingLogins()
        p.add(Self.login(acr: ["mfa", "phr"], maxAge: 300), max: 5, now: 1000, timeout: 600)
        var plain = Self.login()
        plain.state = "t"
        p.add(plain, max: 5, now: 1000, timeout: 600)
        let back = try #require(PendingLogins(json: p.json()))
        #expect(back == p)
        #expect(back.logins[0].acrValues == ["mfa", "phr"] && back.logins[0].maxAge == 300)
        #expect(back.logins[1].acrValues.isEmpty && back.logins[1].maxAge == nil)
    }

    @Test(arguments: [
        #"[{"s":"s","n":"n","v":"v","r":"/","c":"web","t":1,"a":"mfa"}]"#,
        #"[{"s":"s","n":"n","v":"v","r":"/","c":"web","t":1,"a":[1]}]"#,
        #"[{"s":"s","n":"n","v":"v","r":"/","c":"web","t":1,"m":-5}]"#,
        #"[{"s":"s","n":"n","v":"v","r":"/","c":"web","t":1,"m":"300"}]"#
    ])
    func aMalformedStepUpIsNoPendingLogin(_ json: String) {
        #expect(PendingLogins(json: Array(json.utf8)) == nil)
    }

    @Test func aFirstLoginAsksNothingOfTheIDToken() {
        #expect(Self.login().authenticationFailure(JSONObject(), now: 5000, leeway: 30) == nil)
    }

    @Test func theAcrMustBeOneAsked() {
        let l = Self.login(acr: ["mfa", "phr"])
        #expect(l.authenticationFailure(Self.claims(acr: "phr", authTime: nil), now: 5000, leeway: 30) == nil)
        #expect(l.authenticationFailure(Self.claims(acr: "pwd", authTime: 4999), now: 5000, leeway: 30) == .acr("pwd"))
        #expect(l.authenticationFailure(Self.claims(acr: nil, authTime: 4999), now: 5000, leeway: 30) == .acr(nil))
    }

    /// OIDC Core §3.1.2.1: with max_age asked, auth_time is required, and within max_age plus
    /// the ID token check's leeway.
    @Test func maxAgeNeedsARecentAuthTime() {
        let l = Self.login(maxAge: 300)
        #expect(l.authenticationFailure(Self.claims(acr: nil, authTime: nil), now: 5000, leeway: 30) == .noAuthTime)
        #expect(l.authenticationFailure(Self.claims(acr: nil, authTime: 5000 - 330), now: 5000, leeway: 30) == nil)
        #expect(
            l.authenticationFailure(Self.claims(acr: nil, authTime: 5000 - 331), now: 5000, leeway: 30)
                == .tooOld(seconds: 301))
    }

    /// OIDC Core §2: an ID token whose auth_time is an hour ahead does not answer a max_age
    /// (nor does a session that kept it); within the issuer's leeway it does.
    @Test func anAuthTimeInTheFutureDoesNotAnswerMaxAge() {
        let l = Self.login(maxAge: 300)
        #expect(
            l.authenticationFailure(Self.claims(acr: nil, authTime: 5000 + 3600), now: 5000, leeway: 30)
                == .futureAuthTime(seconds: 3600))
        #expect(l.authenticationFailure(Self.claims(acr: nil, authTime: 5000 + 30), now: 5000, leeway: 30) == nil)
        // The session check on a route reads the same rule with the same leeway.
        var route = AuthorizationRequirement()
        route.maxAge = 300
        #expect(
            route.stepUpFailure(Self.claims(acr: nil, authTime: 5000 + 3600), now: 5000, leeway: 30, maxAgeGrace: 30)
                == .futureAuthTime(seconds: 3600))
    }
}

/// What the authorization request of a step-up login carries (OIDC Core §3.1.2.1).
@Suite("Step-up: acr_values and max_age in the authorization request")
struct StepUpRequestParametersTests {
    static let key: JWK = {
        do { return try JWK.generate(for: .ES256, kid: "c1") } catch { preconditionFailure("\(error)") }
    }()

    static func params() -> AuthorizationParameters {
        AuthorizationParameters(
            clientID: "web", redirectURI: "https://gw/cb", scope: ["openid"], state: "s", nonce: "n",
            codeChallenge: "c", extra: [("acr_values", "urn:fixed"), ("prompt", "login")])
    }

    @Test func theyReplaceTheClientsFixedOnesInThePairs() {
        var p = Self.params()
        p.askAuthentication(acrValues: ["mfa", "phr"], maxAge: 300)
        let pairs = p.pairs
        #expect(pairs.filter { $0.0 == "acr_values" }.map(\.1) == ["mfa phr"])
        #expect(pairs.filter { $0.0 == "max_age" }.map(\.1) == ["300"])
        #expect(pairs.contains { $0 == ("prompt", "login") })
    }

    @Test func withoutAStepUpTheFixedOnesStay() {
        var p = Self.params()
        p.askAuthentication(acrValues: [], maxAge: nil)
        #expect(p.pairs.filter { $0.0 == "acr_values" }.map(\.1) == ["urn:fixed"])
        #expect(!p.pairs.contains { $0.0 == "max_age" })
    }

    /// In the signed request object (RFC 9101), which PAR pushes as it is: `acr_values` a
    /// string, `max_age` a number.
    @Test func theRequestObjectCarriesThem() throws {
        var p = Self.params()
        p.askAuthentication(acrValues: ["mfa"], maxAge: 0)
        let jwt = try RequestObject.sign(p, audience: "https://as", key: Self.key, alg: .ES256, now: 1000)
        let claims = try CompactJWS(jwt).claims()
        #expect(claims["acr_values"] == .string("mfa"))
        #expect(claims["max_age"] == .number("0"))
    }
}
