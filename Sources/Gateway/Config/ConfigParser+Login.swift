import Foundation
import JOSE
import OAuth
import Yams

/// `session:`, `login:`, a client's login settings, and the checks of `login` routes.
extension ConfigParser {
    /// `session:`: the keys (`keys` or `keys_file`) here, the others by `SessionConfig.keyTable`.
    static func session(_ node: Node, _ r: ConfigReader) -> SessionConfig {
        var s = SessionConfig()
        guard let m = r.mapping(node, path: "session", section: .session) else { return s }
        var texts: [(String, Node?)] = []
        if m["keys"] != nil && m["keys_file"] != nil {
            r.problem("session.keys", m["keys"], "give either keys or keys_file, not both")
        } else if let n = m["keys"], let seq = r.sequence(n, path: "session.keys") {
            texts = seq.enumerated().compactMap { j, k in r.string(k, path: "session.keys[\(j)]").map { ($0, k) } }
        } else if m["keys_file"] != nil, let text = r.secret(m, key: "keys", path: "session") {
            texts = text.split(separator: "\n").map { (String($0), m["keys_file"]) }
        }
        for (j, (text, n)) in texts.enumerated() {
            // 32 bytes of key, base64 or base64url (`openssl rand -base64 32`).
            let b64url = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .trimmingCharacters(in: CharacterSet(charactersIn: "="))
            guard let key = Base64URL.decode(b64url), key.count == 32 else {
                r.problem("session.keys[\(j)]", n, "must be 32 random bytes, base64-encoded (openssl rand -base64 32)")
                continue
            }
            s.keys.append(key)
        }
        SessionConfig.keyTable.read(m, into: &s, path: "session", r)
        ConfigValidation.session(s, m, r)
        return s
    }

    /// `login:`, read by `LoginConfig.keyTable`.
    static func login(_ node: Node, _ r: ConfigReader) -> LoginConfig {
        var l = LoginConfig()
        guard let m = r.mapping(node, path: "login", section: .login) else { return l }
        LoginConfig.keyTable.read(m, into: &l, path: "login", r)
        return l
    }

    static func loginSettings(_ c: [String: Node], path p: String, hasKey: Bool, _ r: ConfigReader)
        -> LoginClientSettings
    {
        var s = LoginClientSettings()
        if let n = c["request_mode"], let v = r.string(n, path: "\(p).request_mode") {
            if let mode = LoginClientSettings.RequestMode(rawValue: v) {
                s.requestMode = mode
            } else {
                r.problem("\(p).request_mode", n, "must be one of par, request, request_uri, plain")
            }
        }
        if s.requestMode != .plain && !hasKey && c["request_mode"] != nil {
            // RFC 9101: the request object is signed with the client's key.
            r.problem(
                "\(p).request_mode", c["request_mode"],
                "request_mode \(s.requestMode.rawValue) signs a request object: add key_file (tokengate keys generate)")
        }
        if let n = c["response_mode"], let v = r.string(n, path: "\(p).response_mode") {
            if let mode = LoginClientSettings.ResponseMode(rawValue: v) {
                s.responseMode = mode
            } else if v == "form_post.jwt" || v == "form_post" {
                // The pending login's cookie is SameSite=Lax: a cross-site POST to the callback
                // would arrive without it, and no login could be found.
                r.problem(
                    "\(p).response_mode", n,
                    "\(v) is not supported: the login-state cookie is SameSite=Lax, which the AS's cross-site POST does not carry; use jwt"
                )
            } else {
                r.problem("\(p).response_mode", n, "must be one of query, jwt, query.jwt")
            }
        }
        if let n = c["scopes"], let seq = r.sequence(n, path: "\(p).scopes") {
            s.scopes = seq.enumerated().compactMap { r.string($1, path: "\(p).scopes[\($0)]") }
            if !s.scopes.contains("openid") {
                r.problem("\(p).scopes", n, "must include openid (the login validates an ID token)")
            }
        }
        if let n = c["redirect_uri"], let v = r.string(n, path: "\(p).redirect_uri") {
            if ConfigValues.url(v) == nil && !v.contains("?") {
                r.problem("\(p).redirect_uri", n, "\"\(v)\" is not an http(s) URL")
            } else {
                s.redirectURI = v
            }
        }
        if let n = c["post_logout_redirect_uri"], let v = r.string(n, path: "\(p).post_logout_redirect_uri") {
            s.postLogoutRedirectURI = v
        }
        if let n = c["extra"], let em = r.mapping(n, path: "\(p).extra", section: nil) {
            let reserved: Set<String> = [
                "response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge",
                "code_challenge_method", "request", "request_uri", "response_mode"
            ]
            for (k, v) in em.sorted(by: { $0.key < $1.key }) {
                guard !reserved.contains(k) else {
                    r.problem("\(p).extra.\(k)", v, "is set by the gateway itself")
                    continue
                }
                if let sv = r.string(v, path: "\(p).extra.\(k)") { s.extra.append((k, sv)) }
            }
        }
        if let n = c["login_hint_from_query"], let b = r.bool(n, path: "\(p).login_hint_from_query") {
            s.loginHintFromQuery = b
        }
        if let n = c["revoke_on_logout"], let b = r.bool(n, path: "\(p).revoke_on_logout") { s.revokeOnLogout = b }
        if let n = c["dpop"], let b = r.bool(n, path: "\(p).dpop") { s.dpop = b }
        if let n = c["allow_unverified_email"], let b = r.bool(n, path: "\(p).allow_unverified_email") {
            s.allowUnverifiedEmail = b
        }
        if let n = c["userinfo"], let b = r.bool(n, path: "\(p).userinfo") { s.userinfo = b }
        return s
    }

    /// A `login` / `login_or_token` route's client: defined, with an issuer whose metadata
    /// (discovery) gives the endpoints, and a redirect URI the gateway can name.
    static func loginClient(_ m: [String: Node], path p: String, item: Node, cfg: GatewayConfig, _ r: ConfigReader)
        -> String?
    {
        guard let n = m["client"], let name = r.string(n, path: "\(p).client") else {
            r.problem(
                "\(p).client", item,
                "auth: login needs client: NAME (defined: \(cfg.clientNames.joined(separator: ", ")))")
            return nil
        }
        guard let client = cfg.clients[name] else { return nil }  // reported by the caller
        guard let issuerName = client.issuer, let issuer = cfg.issuers[issuerName] else {
            r.problem("clients.\(name).issuer", n, "a login client needs issuer: NAME (an issuer with discovery: true)")
            return nil
        }
        if issuer.keys != .discovery {
            r.problem(
                "issuers.\(issuerName).discovery", n,
                "a login needs the issuer's metadata (authorization and token endpoints): set discovery: true")
        }
        if client.login.redirectURI == nil && cfg.publicURLs.isEmpty {
            r.problem(
                "clients.\(name).redirect_uri", n,
                "set redirect_uri, or public_url (the redirect URI is then public_url + \(cfg.login.callbackPath))")
        }
        return name
    }
}
