import Foundation
import Testing

@testable import Gateway

@Suite("Config: auth: login routes, clients' login settings, session:, login:")
struct LoginConfigTests {
    static let keyFile: String = {
        let path = NSTemporaryDirectory() + "tg-login-config-\(getpid()).jwk"
        let key =
            #"{"kty":"EC","crv":"P-256","kid":"k1","x":"WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis","y":"y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE","d":"Hndv7ZZjs_ke8o9zXYo3iq-Yr8SewI5vrqd0pAvEPqg"}"#
        _ = FileManager.default.createFile(atPath: path, contents: Data(key.utf8))
        return path
    }()

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(
            yaml: yaml, environment: ["SK": "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="], baseDirectory: "/etc/tg",
            cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    var base: String {
        """
        public_url: https://app.example.com
        session: { keys: ["${SK}"], idle_timeout: 30m, absolute_timeout: 8h, refresh_margin: 20s, max_pending_logins: 3 }
        login: { allowed_redirect_hosts: [docs.example.com, "*.example.org"], after_logout: /goodbye }
        issuers:
          corp: { issuer: "https://idp.example.com", discovery: true, audiences: [api] }
        clients:
          web:
            issuer: corp
            client_id: web-app
            auth: private_key_jwt
            key_file: \(Self.keyFile)
            request_mode: request_uri
            scopes: [openid, email]
            extra: { prompt: login, acr_values: mfa }
            post_logout_redirect_uri: https://app.example.com/bye
            dpop: true
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path_prefix: /api/ }
            upstream: a
            auth: login_or_token
            client: web
            issuers: [corp]
          - match: { path_prefix: / }
            upstream: a
            auth: login
            client: web
            forward_token: true
            headers: { X-Email: email }
        """
    }

    @Test func parsesLoginSettings() throws {
        let cfg = try parse(base).get()
        #expect(cfg.session.keys.count == 1 && cfg.session.keys[0].count == 32 && cfg.session.idleTimeout == 1800)
        #expect(
            cfg.session.absoluteTimeout == 8 * 3600 && cfg.session.refreshMargin == 20
                && cfg.session.maxPendingLogins == 3)
        #expect(!cfg.session.pendingLoginsInCookie)
        let cookie = try parse(
            base.replacingOccurrences(
                of: "max_pending_logins: 3", with: "max_pending_logins: 3, pending_logins: cookie")
        ).get()
        #expect(cookie.session.pendingLoginsInCookie)
        #expect(
            cfg.login.allowedRedirectHosts == ["docs.example.com", "*.example.org"]
                && cfg.login.afterLogout == "/goodbye")
        let web = try #require(cfg.clients["web"])
        #expect(web.key != nil && web.requestObjectAlgorithm == .ES256 && web.login.requestMode == .request_uri)
        #expect(
            web.login.scopes == ["openid", "email"] && web.login.extra.map(\.0) == ["acr_values", "prompt"]
                && web.login.dpop)
        // login_or_token: both parts.
        #expect(cfg.routes[0].options.auth.loginRoute?.client == "web" && cfg.routes[0].options.auth.tokenRoute != nil)
        #expect(
            cfg.routes[1].options.auth.loginRoute?.client == "web" && cfg.routes[1].options.auth.tokenRoute == nil
                && cfg.routes[1].options.auth.loginRoute?.forwardSessionToken == true)
        // The gateway's cookies are kept from the upstream.
        #expect(
            cfg.ownCookieNames.contains("__Host-tokengate_session") && cfg.ownCookieNames.contains("tokengate_login_1"))
    }

    @Test func aResponseModeOfJWTAsksForJARM() throws {
        let cfg = try parse(
            base.replacingOccurrences(
                of: "request_mode: request_uri", with: "request_mode: request_uri\n    response_mode: jwt")
        ).get()
        #expect(cfg.clients["web"]?.login.responseMode == .jwt && cfg.clients["web"]?.login.responseMode.isJWT == true)
        #expect(try parse(base).get().clients["web"]?.login.responseMode == .query)
    }

    @Test func mistakesAreReported() {
        func has(_ from: String, _ to: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let p = problems(base.replacingOccurrences(of: from, with: to))
            #expect(p.contains(message), "\(to) → \(p)", sourceLocation: sourceLocation)
        }
        has("    client: web\n    forward_token", "    forward_token", "auth: login needs client")
        has("max_pending_logins: 3", "pending_logins: redis", "session.pending_logins: must be store or cookie")
        has("discovery: true", "jwks_uri: \"https://idp.example.com/jwks\"", "a login needs the issuer's metadata")
        has("request_mode: request_uri", "request_mode: sideways", "must be one of par, request, request_uri, plain")
        has(
            "request_mode: request_uri", "request_mode: request_uri\n    response_mode: fragment",
            "must be one of query, jwt, query.jwt")
        has(
            "request_mode: request_uri", "request_mode: request_uri\n    response_mode: form_post.jwt",
            "response_mode: form_post.jwt is not supported")
        has("scopes: [openid, email]", "scopes: [email]", "must include openid")
        has("extra: { prompt: login, acr_values: mfa }", "extra: { state: x }", "is set by the gateway itself")
        has("keys: [\"${SK}\"]", "keys: [tooshort]", "must be 32 random bytes")
        has("public_url: https://app.example.com\n", "", "set redirect_uri, or public_url")
        has("after_logout: /goodbye", "after_logout: //evil.example", "must be a path or an https URL")
        has(
            "allowed_redirect_hosts: [docs.example.com", "allowed_redirect_hosts: [\"evil example\"",
            "must be a host name")
        has(
            "auth: private_key_jwt\n    key_file: \(Self.keyFile)", "auth: client_secret_basic\n    secret: s3cr3t",
            "signs a request object: add key_file")
    }
}
