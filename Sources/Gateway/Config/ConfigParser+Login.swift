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

    /// `login:`, read by `LoginConfig.keyTable`; its `rate_limit` here, by the policies
    /// defined under `rate_limits`.
    static func login(_ node: Node, rateLimits: [String: RateLimitPolicy], _ r: ConfigReader) -> LoginConfig {
        var l = LoginConfig()
        guard let m = r.mapping(node, path: "login", section: .login) else { return l }
        LoginConfig.keyTable.read(m, into: &l, path: "login", r)
        if let n = m["rate_limit"] {
            // Only by the client's address. The login endpoints are public: a policy counted
            // per caller would have no caller to count, and a header is the client's to
            // vary (a new value each time escapes the limit; left out, everyone shares one
            // budget that one client can use up).
            l.rateLimits = rateLimitPolicies(n, path: "login.rate_limit", defined: rateLimits, r).filter { policy in
                guard policy.key == .ip else {
                    r.problem(
                        "login.rate_limit", n,
                        "\"\(policy.name)\" counts by \(policy.key.text): the login endpoints have no caller yet, "
                            + "and a header is the client's to vary; count them by ip")
                    return false
                }
                return true
            }
        }
        return l
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
