import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// The login routes' time rules, driven by a manual clock through a worker's decision endpoint:
/// the session's idle and absolute timeouts, the refresh margin (a refresh within it, none
/// before), and the pending login's window (`login_timeout`). The AS is an in-process fake on
/// the worker's loop.
@Suite("Session time rules with a manual clock", .serialized)
struct SessionTimeTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        public_url: https://app.example
        decision: {}
        session:
          keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="]
          idle_timeout: 30m
          absolute_timeout: 8h
          refresh_margin: 60s
          login_timeout: 10m
        issuers:
          corp: { issuer: "http://idp.example", discovery: true, audiences: [api] }
        clients:
          web: { issuer: corp, client_id: web, auth: client_secret_post, secret: "0123456789abcdef0123456789abcdef", request_mode: plain }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: app
            match: { path_prefix: / }
            upstream: app
            auth: login
            client: web
        """

    final class Harness {
        let clock = ManualClock()
        let worker: Worker
        let idp: FakeAuthorizationServer
        var login: LoginService { worker.login }

        init(yaml: String = SessionTimeTests.yaml, loginShared: LoginShared = LoginShared()) throws {
            worker = try testWorker(yaml, wallClock: clock, loginShared: loginShared)
            idp = try FakeAuthorizationServer(loop: worker.loop)
            let metadata = """
                {"issuer":"http://idp.example","authorization_endpoint":"http://idp.example/authorize",
                 "token_endpoint":"\(idp.url)/token","userinfo_endpoint":"\(idp.url)/userinfo",
                 "jwks_uri":"http://idp.example/jwks"}
                """
            worker.login.providerMetadata["corp"] = try ProviderMetadata.parse(
                Array(metadata.utf8), expectedIssuer: "http://idp.example")
        }

        var now: Int64 { clock.seconds }

        /// A sealed session cookie value, the session made now.
        func session(
            accessExpiresIn: Int64 = 3600, refreshToken: String? = nil, teams: [String]? = nil, client: String = "web"
        ) throws -> String {
            var claims = JSONObject()
            claims["sub"] = .string("alice")
            if let teams { claims["teams"] = .array(teams.map { .string($0) }) }
            let s = Session(
                id: Session.newID(), client: client, subject: "alice", claims: claims,
                idToken: nil, accessToken: "at1", refreshToken: refreshToken, accessExpiresAt: now + accessExpiresIn,
                createdAt: now, lastSeenAt: now)
            var sealed: String?
            login.store.save(s, expiresAt: now + 8 * 3600, creating: true) { sealed = try? $0.get() }
            return try #require(sealed)
        }

        /// Asks the forward-auth endpoint about `GET https://app.example<path>` with `cookies`,
        /// running the worker's loop until it answers.
        func ask(_ path: String, cookies: [String: String] = [:]) -> InMemoryTransport {
            var fields: [(name: String, value: String)] = [("Accept", "application/json")]
            if !cookies.isEmpty {
                fields.append(("Cookie", cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")))
            }
            let transport = askForwardAuth(worker, host: "app.example", path, fields)
            if !transport.ended { worker.loop.run { transport.ended } }
            return transport
        }

        func ask(session cookie: String) -> InMemoryTransport {
            ask("/page", cookies: [login.settings.sessionCookie: cookie])
        }

        /// The session a sealed cookie holds.
        func open(_ cookie: String) -> Session? {
            var found: Session?
            login.store.load(cookie) { if case .found(let s) = $0 { found = s } }
            return found
        }

        /// The session cookie a response sets, if any.
        func newSession(_ t: InMemoryTransport) -> String? {
            let prefix = login.settings.sessionCookie + "="
            for line in t.head?.fields.values("Set-Cookie") ?? [] where line.hasPrefix(prefix) {
                let value = line.dropFirst(prefix.count).prefix { $0 != ";" }
                if !value.isEmpty { return String(value) }
            }
            return nil
        }
    }

    @Test func idleTimeoutEndsASessionNobodyUses() throws {
        let h = try Harness()
        let cookie = try h.session()
        h.clock.advance(30 * 60 - 1)
        let used = h.ask(session: cookie)
        #expect(used.status == 200)
        let touched = try #require(h.newSession(used), "activity moves the idle deadline: the cookie is re-sealed")
        h.clock.advance(1)
        let idle = h.ask(session: cookie)
        #expect(idle.status == 401, "the untouched cookie is idle for 30m")
        #expect(h.ask(session: touched).status == 200, "the touched one is not")
        h.clock.advance(30 * 60)
        #expect(h.ask(session: touched).status == 401)
    }

    @Test func absoluteTimeoutEndsEvenAnActiveSession() throws {
        let h = try Harness()
        var cookie = try h.session()
        for _ in 0..<23 {  // active every 20 minutes for 7h40m
            h.clock.advance(20 * 60)
            let t = h.ask(session: cookie)
            #expect(t.status == 200)
            cookie = h.newSession(t) ?? cookie
        }
        h.clock.advance(19 * 60 + 59)  // 8h − 1s after the login
        let last = h.ask(session: cookie)
        #expect(last.status == 200)
        cookie = h.newSession(last) ?? cookie
        h.clock.advance(1)
        let ended = h.ask(session: cookie)
        #expect(ended.status == 401)
        #expect(h.idp.requests.isEmpty, "no refresh token, no AS")
    }

    @Test func refreshHappensWithinTheMarginNotBefore() throws {
        let h = try Harness()
        h.idp.answers["/token"] = (
            200, #"{"access_token":"at2","token_type":"Bearer","expires_in":600,"refresh_token":"rt2"}"#
        )
        let cookie = try h.session(accessExpiresIn: 300, refreshToken: "rt1")
        h.clock.advance(239)  // 61 s before the access token expires: outside the 60 s margin
        let before = h.ask(session: cookie)
        #expect(before.status == 200 && h.idp.hits("/token") == 0)
        h.clock.advance(1)  // 60 s before: within the margin
        let due = h.ask(session: cookie)
        #expect(due.status == 200)
        #expect(h.idp.hits("/token") == 1)
        #expect(h.idp.requests.first?.body.contains("grant_type=refresh_token") == true)
        #expect(h.idp.requests.first?.body.contains("refresh_token=rt1") == true)
        let refreshed = try #require(h.newSession(due))
        // The refreshed session's token lives 600 s: not due again until 540 s from now.
        h.clock.advance(539)
        #expect(h.ask(session: refreshed).status == 200)
        #expect(h.idp.hits("/token") == 1)
    }

    @Test func pendingLoginsLastTheLoginTimeout() throws {
        let h = try Harness()
        h.idp.answers["/token"] = (400, #"{"error":"invalid_grant"}"#)
        func start() throws -> (state: String, cookies: [String: String]) {
            let t = h.ask("/page")
            #expect(t.status == 401)
            // An API-style request gets 401; a browser's gets the redirect with the state.
            let (exchange, browser) = InMemoryTransport.exchange(
                "GET", "/oauth2/start?rd=/page", fields: [("Host", "app.example"), ("Accept", "text/html")],
                peer: "10.1.2.3")
            h.worker.handle(exchange)
            if !browser.ended { h.worker.loop.run { browser.ended } }
            #expect(browser.status == 302)
            let location = try #require(browser.head?.fields.first("Location"))
            let state = try #require(
                URLComponents(string: location)?.queryItems?.first { $0.name == "state" }?.value)
            var jar: [String: String] = [:]
            for line in browser.head?.fields.values("Set-Cookie") ?? [] {
                let pair = line.prefix { $0 != ";" }
                if let eq = pair.firstIndex(of: "=") {
                    jar[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
                }
            }
            return (state, jar)
        }
        func callback(_ state: String, _ jar: [String: String]) -> InMemoryTransport {
            let cookie = jar.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
            let (exchange, t) = InMemoryTransport.exchange(
                "GET", "/oauth2/callback?code=c1&state=\(state)",
                fields: [("Host", "app.example"), ("Accept", "text/html"), ("Cookie", cookie)], peer: "10.1.2.3")
            h.worker.handle(exchange)
            if !t.ended { h.worker.loop.run { t.ended } }
            return t
        }
        // Within login_timeout (10m): the state is taken and its code goes to the token endpoint.
        let inTime = try start()
        h.clock.advance(10 * 60 - 1)
        _ = callback(inTime.state, inTime.cookies)
        #expect(h.idp.hits("/token") == 1)
        // Past it: refused at the gateway, the AS is not asked.
        let late = try start()
        h.clock.advance(10 * 60)
        let refused = callback(late.state, late.cookies)
        #expect(refused.status == 400)
        #expect(h.idp.hits("/token") == 1)
    }

    /// A userinfo endpoint that cannot be reached at a refresh keeps the session's claims for
    /// that refresh only (they are marked stale): the next refresh takes fresh ones and clears
    /// the mark; two unreachable refreshes in a row end the session. Each step is the next
    /// refresh, reached by moving the clock into the margin (the coordinator's grace, which
    /// would hold a second refresh of one session back for 30 s, is off here).
    @Test func unreachableUserinfoKeepsClaimsUntilTheNextRefreshOnly() throws {
        let yaml = Self.yaml.replacingOccurrences(
            of: "request_mode: plain }", with: "request_mode: plain, userinfo: true }"
        )
        .replacingOccurrences(of: "\n    client: web", with: "\n    client: web\n    headers: { X-Teams: teams }")
        let h = try Harness(yaml: yaml, loginShared: LoginShared(refreshes: RefreshCoordinator(grace: 0)))
        h.idp.answers["/token"] = (
            200, #"{"access_token":"at2","token_type":"Bearer","expires_in":300,"refresh_token":"rt2"}"#
        )
        var cookie = try h.session(accessExpiresIn: 300, refreshToken: "rt1", teams: ["audit", "ops"])
        func nextRefresh(userinfo: (Int, String)) -> InMemoryTransport {
            h.idp.answers["/userinfo"] = userinfo
            h.clock.advance(241)  // 59 s before the access token (300 s) expires
            let t = h.ask(session: cookie)
            cookie = h.newSession(t) ?? cookie
            return t
        }
        let down = nextRefresh(userinfo: (503, #"{"error":"down"}"#))
        #expect(down.status == 200 && h.idp.hits("/token") == 1 && h.idp.hits("/userinfo") == 1)
        var s = try #require(h.open(cookie))
        #expect(s.claims["teams"] == .array([.string("audit"), .string("ops")]), "kept")
        #expect(s.userinfoStaleSince == h.now)

        let back = nextRefresh(userinfo: (200, #"{"sub":"alice","teams":["audit"]}"#))
        #expect(back.status == 200 && h.idp.hits("/token") == 2)
        s = try #require(h.open(cookie))
        #expect(s.claims["teams"] == .array([.string("audit")]) && s.userinfoStaleSince == nil, "fresh, not stale")

        let downAgain = nextRefresh(userinfo: (502, "{}"))
        #expect(downAgain.status == 200 && h.idp.hits("/token") == 3)
        #expect(try #require(h.open(cookie)).userinfoStaleSince == h.now)

        let stillDown = nextRefresh(userinfo: (502, "{}"))
        #expect(h.idp.hits("/token") == 4 && h.idp.hits("/userinfo") == 4)
        #expect(stillDown.status == 401, "the second unreachable refresh in a row ends the session")
        #expect(h.ask(session: cookie).status == 401)
    }
}
