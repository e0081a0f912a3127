import Foundation
import Testing

@testable import Gateway
@testable import Reactor

/// Login routes as a caller meets them: which challenges a `login_or_token` route sends an
/// API client with neither a session nor a token, and which sessions keep a tunnel open on
/// a route that several clients log in to.
@Suite("Login routes: challenges and sessions of every listed client", .serialized)
struct LoginRouteTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        public_url: https://app.example
        decision: {}
        session:
          keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="]
        issuers:
          corp: { issuer: "http://idp.example", discovery: true, audiences: [api] }
        clients:
          web: { issuer: corp, client_id: web, auth: client_secret_post, secret: "0123456789abcdef0123456789abcdef", request_mode: plain }
          ext: { issuer: corp, client_id: ext, auth: client_secret_post, secret: "fedcba9876543210fedcba9876543210", request_mode: plain }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: app
            match: { path_prefix: / }
            upstream: app
            auth: login_or_token
            clients: [web, ext]
            issuers: [corp]
        """

    /// RFC 9449 §7.1: a resource that accepts DPoP says so in its challenge. The token side
    /// of `login_or_token` takes Bearer and DPoP tokens alike, so both are named, DPoP with
    /// its algorithms; before, only Bearer was.
    @Test func loginOrTokenChallengesNameBothSchemes() throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        let t = h.ask("/api/x")
        #expect(t.status == 401)
        let challenges = t.head?.fields.values("WWW-Authenticate").joined(separator: ", ") ?? ""
        #expect(challenges.contains("Bearer realm="), "\(challenges)")
        #expect(challenges.contains("DPoP "), "\(challenges)")
        #expect(challenges.contains("algs=\""), "\(challenges)")
        #expect(!challenges.contains("error="), "no credentials: no error code (RFC 6750 §3.1)")
    }

    /// A tunnel's session is checked again while it runs. A session of any client the route
    /// lists keeps it open (before, only the route's first client's did, so a tunnel opened
    /// with an `ext` session was closed at its first re-check); a client the route does not
    /// list ends it.
    @Test func tunnelRecheckKeepsSessionsOfEveryListedClient() throws {
        let h = try SessionTimeTests.Harness(yaml: Self.yaml)
        let route = try #require(h.worker.config.routes.first?.options.auth.loginRoute)
        for client in ["web", "ext"] {
            let cookie = try h.session(client: client)
            var liveness: LoginService.SessionLiveness?
            h.login.recheck(
                route: route, cookies: Cookies(cookieHeaders: ["\(h.login.settings.sessionCookie)=\(cookie)"])
            ) {
                liveness = $0
            }
            if liveness == nil { h.worker.loop.run { liveness != nil } }
            guard case .alive = liveness else {
                Issue.record("a session of \(client) on a route listing it: \(String(describing: liveness))")
                continue
            }
        }
        let webOnly = try #require(
            LoginRouteConfig(
                clients: ["web"], forwardSessionToken: route.forwardSessionToken,
                sessionRequirement: route.sessionRequirement))
        let ext = try h.session(client: "ext")
        var liveness: LoginService.SessionLiveness?
        h.login.recheck(route: webOnly, cookies: Cookies(cookieHeaders: ["\(h.login.settings.sessionCookie)=\(ext)"])) {
            liveness = $0
        }
        if liveness == nil { h.worker.loop.run { liveness != nil } }
        guard case .ended(let why) = liveness else {
            Issue.record("an ext session on a web-only route must end: \(String(describing: liveness))")
            return
        }
        #expect(why == "session of another client")
    }
}
