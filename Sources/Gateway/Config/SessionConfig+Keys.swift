import Foundation
import JOSE
import OAuth
import Reactor
import Yams

extension SessionConfig {
    /// `keys` or `keys_file`: 32-byte keys, the first seals new cookies.
    static let sealingKeys = ConfigKeyGroup<SessionConfig, ConfigReader>.lines("keys") { s, texts, p, r in
        for (j, (text, n)) in texts.enumerated() {
            // 32 bytes of key, base64 or base64url (`openssl rand -base64 32`).
            let b64url = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .trimmingCharacters(in: CharacterSet(charactersIn: "="))
            guard let key = Base64URL.decode(b64url), key.count == 32 else {
                r.problem("\(p)[\(j)]", n, "must be 32 random bytes, base64-encoded (openssl rand -base64 32)")
                continue
            }
            s.keys.append(key)
        }
    }

    /// The keys of `session:`, each said once: its reference row (type and default, checked
    /// against `SessionConfig()` by ConfigReferenceTests) and its reader: `keys` and
    /// `keys_file` (one or the other) together, the others each alone, in this order.
    /// same_site against secure_cookie is ConfigValidation's.
    static let keyTable = ConfigKeyTable<SessionConfig, ConfigReader>([
        .init(
            "keys", type: "list of 32-byte keys, base64", default: "a random key per process (sessions end on restart)",
            reader: .group(sealingKeys)),
        .init("keys_file", type: "path (one key per line)", default: "none", reader: .group(sealingKeys)),
        .init(
            "cookie_name", type: "cookie name", default: "`tokengate_session` (sent as `__Host-tokengate_session`)",
            checkedBy: ConfigDefault.text(SessionConfig().cookieName)
        ) { s, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if v.isEmpty || v.utf8.count > 64 || !v.utf8.allSatisfy(HeaderRules.isTokenChar) {
                r.problem(p, n, "must be a cookie name (letters, digits, - and _)")
            } else {
                s.cookieName = v
            }
        },
        .init(
            "secure_cookie", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(SessionConfig().secureCookie)
        ) {
            s, n, p, r in
            if let b = r.bool(n, path: p) { s.secureCookie = b }
        },
        .init(
            "idle_timeout", type: "duration (at least 5s)", default: "`1h`",
            checkedBy: ConfigDefault.duration(SessionConfig().idleTimeout)
        ) { s, n, p, r in
            if let v = r.duration(n, path: p) { s.idleTimeout = max(v, 5) }
        },
        .init(
            "absolute_timeout", type: "duration (at least 5s)", default: "`12h`",
            checkedBy: ConfigDefault.duration(SessionConfig().absoluteTimeout)
        ) { s, n, p, r in
            if let v = r.duration(n, path: p) { s.absoluteTimeout = max(v, 5) }
        },
        .init(
            "refresh_margin", type: "duration", default: "`30s`",
            checkedBy: ConfigDefault.duration(SessionConfig().refreshMargin)
        ) { s, n, p, r in
            if let v = r.duration(n, path: p) { s.refreshMargin = v }
        },
        .init(
            "login_timeout", type: "duration (30s to 1h)", default: "`10m`",
            checkedBy: ConfigDefault.duration(SessionConfig().loginTimeout)
        ) { s, n, p, r in
            if let v = r.duration(n, path: p) { s.loginTimeout = min(max(v, 30), 3600) }
        },
        .init(
            "max_pending_logins", type: "number", default: "`5`",
            checkedBy: ConfigDefault.number(SessionConfig().maxPendingLogins)
        ) { s, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let k = Int(v), k >= 1, k <= 20 {
                s.maxPendingLogins = k
            } else {
                r.problem(p, n, "must be from 1 to 20")
            }
        },
        .init(
            "cache_ttl", type: "duration (at most 60s)", default: "`5s`",
            checkedBy: ConfigDefault.duration(SessionConfig().cacheTTL)
        ) { s, n, p, r in
            if let v = r.duration(n, path: p) { s.cacheTTL = min(v, 60) }
        },
        .init(
            "pending_logins", type: "`store` or `cookie`", default: "`store`",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "store" && !SessionConfig().pendingLoginsInCookie }
        ) { s, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            switch v {
            case "store": s.pendingLoginsInCookie = false
            case "cookie": s.pendingLoginsInCookie = true
            default: r.problem(p, n, "must be store or cookie")
            }
        },
        .init("cookie_domain", type: "domain name", default: "none (host-only cookie)") { s, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if v.hasPrefix(".") {
                r.problem(
                    p, n, "write the domain without the leading dot (\(v.dropFirst())); it covers its subdomains anyway"
                )
            } else if let host = HostNormalizer.normalize(v), host == v.lowercased(), host.contains("."),
                !host.contains(":"),
                !host.split(separator: ".").allSatisfy({ $0.allSatisfy(\.isNumber) })
            {
                s.cookieDomain = host
            } else {
                r.problem(p, n, "must be a domain name with a dot, such as example.com (not an IP address, no port)")
            }
        },
        .init(
            "same_site", type: "`lax`, `strict` or `none`", default: "`lax`",
            checkedBy: ConfigDefault.text(SessionConfig().sameSite.rawValue)
        ) { s, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let ss = SameSite(rawValue: v.lowercased()) {
                s.sameSite = ss
            } else {
                r.problem(p, n, "must be lax (the default), strict or none")
            }
        }
    ])
}

extension LoginConfig {
    /// The keys of `login:`, each read here in this order.
    static let keyTable = ConfigKeyTable<LoginConfig, ConfigContext>([
        .init(
            "start_path", type: "normalized path", default: "`/oauth2/start`",
            checkedBy: ConfigDefault.text(LoginConfig().startPath)
        ) { l, n, p, c in
            if let v = path(n, p, c.r) { l.startPath = v }
        },
        .init(
            "callback_path", type: "normalized path", default: "`/oauth2/callback`",
            checkedBy: ConfigDefault.text(LoginConfig().callbackPath)
        ) { l, n, p, c in
            if let v = path(n, p, c.r) { l.callbackPath = v }
        },
        .init(
            "logout_path", type: "normalized path", default: "`/oauth2/logout`",
            checkedBy: ConfigDefault.text(LoginConfig().logoutPath)
        ) { l, n, p, c in
            if let v = path(n, p, c.r) { l.logoutPath = v }
        },
        .init(
            "request_object_path", type: "normalized path (a `/` is added at the end)", default: "`/oauth2/request/`",
            checkedBy: ConfigDefault.text(LoginConfig().requestObjectPath)
        ) { l, n, p, c in
            if let v = path(n, p, c.r) { l.requestObjectPath = v.hasSuffix("/") ? v : v + "/" }
        },
        .init(
            "jwks_path", type: "normalized path", default: "`/.well-known/jwks.json`",
            checkedBy: ConfigDefault.text(LoginConfig().jwksPath)
        ) { l, n, p, c in
            if let v = path(n, p, c.r) { l.jwksPath = v }
        },
        .init(
            "allowed_redirect_hosts", type: "list of host names or `*.suffix`",
            default: "`[]` (paths on this origin only)",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "[]" && LoginConfig().allowedRedirectHosts.isEmpty }
        ) { l, n, p, c in
            guard let seq = c.r.sequence(n, path: p) else { return }
            l.allowedRedirectHosts = seq.enumerated().compactMap { j, h in
                guard let s = c.r.string(h, path: "\(p)[\(j)]") else { return nil }
                guard HostPattern(s) != nil else {
                    c.r.problem("\(p)[\(j)]", h, "must be a host name or *.suffix")
                    return nil
                }
                return s
            }
        },
        .init(
            "after_logout", type: "path or https URL", default: "`/`",
            checkedBy: ConfigDefault.text(LoginConfig().afterLogout)
        ) { l, n, p, c in
            guard let v = c.r.string(n, path: p) else { return }
            if v.hasPrefix("/") && !v.hasPrefix("//") || v.hasPrefix("https://") {
                l.afterLogout = v
            } else {
                c.r.problem(p, n, "must be a path or an https URL")
            }
        },
        .init(
            "backchannel_logout_path", type: "normalized path", default: "`/oauth2/backchannel-logout`",
            checkedBy: ConfigDefault.text(LoginConfig().backchannelLogoutPath)
        ) { l, n, p, c in
            if let v = path(n, p, c.r) { l.backchannelLogoutPath = v }
        },
        .init(
            "rate_limit", type: "name of a `rate_limits` entry with `key: ip`, or a list", default: "none"
        ) { l, n, p, c in
            // Only by the client's address. The login endpoints are public: a policy counted
            // per caller would have no caller to count, and a header is the client's to
            // vary (a new value each time escapes the limit; left out, everyone shares one
            // budget that one client can use up).
            l.rateLimits = ConfigParser.addressLimits(n, path: p, c, refusal: "the login endpoints have no caller yet")
        }
    ])

    /// A normalized path starting with `/`, else the problem.
    private static func path(_ n: Node, _ p: String, _ r: ConfigReader) -> String? {
        guard let v = r.string(n, path: p) else { return nil }
        if case .success(let norm) = PathNormalizer.normalize(target: v), norm.path == v, norm.query == nil { return v }
        r.problem(p, n, "must be a normalized path starting with /")
        return nil
    }
}
