import Foundation
import JOSE
import OAuth
import Yams

/// `session:`, `login:`, and the checks of `login` routes.
extension ConfigParser {
    /// `session:`: the keys (`keys` or `keys_file`) here, the others by `SessionConfig.keyTable`.
    static func session(_ node: Node, _ r: ConfigReader) -> SessionConfig {
        var s = SessionConfig()
        guard let m = r.mapping(node, path: "session", section: .session) else { return s }
        SessionConfig.keyTable.read(m, into: &s, path: "session", r)
        ConfigValidation.session(s, m, r)
        return s
    }

    /// `login:`, read by `LoginConfig.keyTable` (its `rate_limit` names policies defined under
    /// `rate_limits`, read before it).
    static func login(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> LoginConfig {
        var l = LoginConfig()
        guard let m = r.mapping(node, path: "login", section: .login) else { return l }
        LoginConfig.keyTable.read(m, into: &l, path: "login", ConfigContext(cfg: cfg, r: r))
        return l
    }

    /// Rate-limit policies for endpoints with no caller yet (`login.rate_limit`): only those
    /// counted by the client's address. A header is the client's to vary: a new value each
    /// time escapes the limit.
    static func addressLimits(_ n: Node, path p: String, _ c: ConfigContext, refusal: String) -> [RateLimitPolicy] {
        rateLimitPolicies(n, path: p, defined: c.cfg.rateLimits, c.r).filter { policy in
            guard policy.key == .ip else {
                c.r.problem(
                    p, n,
                    "\"\(policy.name)\" counts by \(policy.key.text): \(refusal), and a header is the client's to vary; count them by ip"
                )
                return false
            }
            return true
        }
    }

    /// A `login` / `login_or_token` route's client: defined, with an issuer whose metadata
    /// (discovery) gives the endpoints, and a redirect URI the gateway can name. `n`: the name
    /// as given, at `path`; nil when the route gives none (`item`: the route).
    static func loginClient(_ n: Node?, path p: String, item: Node, cfg: GatewayConfig, _ r: ConfigReader)
        -> String?
    {
        guard let n, let name = r.string(n, path: p) else {
            r.problem(
                p, item,
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
