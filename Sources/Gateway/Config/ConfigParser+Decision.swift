import Yams

/// `decision:` (see `DecisionConfig`).
extension ConfigParser {
    static func decision(_ node: Node, _ r: ConfigReader) -> DecisionConfig {
        var d = DecisionConfig()
        d.enabled = true
        // `decision: {}` or `decision: on` both switch it on with the defaults.
        if case .scalar = node {
            if let on = r.bool(node, path: "decision") { d.enabled = on }
            return d
        }
        guard let m = r.mapping(node, path: "decision", section: .decision) else { return d }
        if let n = m["enabled"], let b = r.bool(n, path: "decision.enabled") { d.enabled = b }
        func path(_ key: String, _ value: String, _ n: Node) -> String? {
            if case .success(let norm) = PathNormalizer.normalize(target: value), norm.path == value, norm.query == nil,
                value.count > 1, !value.hasSuffix("/")
            {
                return value
            }
            r.problem(
                "decision.\(key)", n,
                "must be a normalized path starting with / (such as /_tokengate/auth), not / itself and without a trailing /"
            )
            return nil
        }
        // Each endpoint may be switched off (`off`): an ingress style not in use is then no
        // endpoint at all.
        func endpoint(_ key: String, _ set: (String?) -> Void) {
            guard let n = m[key], let v = r.string(n, path: "decision.\(key)") else { return }
            if v == "off" {
                set(nil)
            } else if let p = path(key, v, n) {
                // The recipes route /oauth2/ to tokengate publicly: a decision endpoint there
                // would answer clients (and hand them the verdict's identity headers).
                if p == "/oauth2" || p.hasPrefix("/oauth2/") {
                    r.problem(
                        "decision.\(key)", n,
                        "must not lie under /oauth2/, which the ingress routes to tokengate for everyone; use /_tokengate/… and keep it internal"
                    )
                }
                set(p)
            }
        }
        endpoint("path") { d.path = $0 }
        endpoint("forward_auth_path") { d.forwardAuthPath = $0 }
        endpoint("ext_authz_prefix") { d.extAuthzPrefix = $0 }
        if let n = m["ext_authz_grpc"], let b = r.bool(n, path: "decision.ext_authz_grpc") { d.extAuthzGRPC = b }
        if m["secret"] != nil || m["secret_file"] != nil, let secret = r.secret(m, key: "secret", path: "decision") {
            // A header value the ingress can send as it is, long enough not to be guessed.
            if secret.utf8.count < 16 || !secret.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
                r.problem(
                    "decision.secret", m["secret"] ?? m["secret_file"],
                    "must be at least 16 visible ASCII characters (no spaces), e.g. `openssl rand -hex 32`")
            } else {
                d.secret = Array(secret.utf8)
            }
        }
        if let n = m["allow_status"], let v = r.string(n, path: "decision.allow_status") {
            if v == "200" || v == "202" {
                d.allowStatus = Int(v)!
            } else {
                r.problem("decision.allow_status", n, "must be 200 or 202")
            }
        }
        if let n = m["login_response"], let v = r.string(n, path: "decision.login_response") {
            if let l = DecisionConfig.LoginResponse(rawValue: v) {
                d.loginResponse = l
            } else {
                r.problem(
                    "decision.login_response", n,
                    "must be auto, 401 (nginx: error_page 401 redirects) or 302 (Traefik, Caddy)")
            }
        }
        if let prefix = d.extAuthzPrefix {
            for (key, p) in [("path", d.path), ("forward_auth_path", d.forwardAuthPath)] {
                if let p, p == prefix || p.hasPrefix(prefix + "/") {
                    r.problem(
                        "decision.\(key)", m[key] ?? node,
                        "lies under decision.ext_authz_prefix \(prefix); pick another path or prefix")
                }
            }
        }
        if let a = d.path, a == d.forwardAuthPath {
            r.problem(
                "decision.forward_auth_path", m["forward_auth_path"] ?? node,
                "is decision.path too: each ingress style needs its own endpoint (nginx: path; Traefik, Caddy: forward_auth_path)"
            )
        }
        if d.path == nil && d.forwardAuthPath == nil && d.extAuthzPrefix == nil && !d.extAuthzGRPC {
            r.problem(
                "decision", node,
                "every endpoint is off: set path, forward_auth_path, ext_authz_prefix or ext_authz_grpc")
        }
        return d
    }

    /// Checks that need the whole config: a decision believes only trusted proxies, so without
    /// any every call would be refused.
    static func checkDecision(_ cfg: GatewayConfig, node: Node?, _ r: ConfigReader) {
        guard cfg.decision.enabled else { return }
        if cfg.trustedProxies.isEmpty {
            r.problem(
                "decision", node,
                "needs trusted_proxies: list the ingress's addresses (the endpoint believes the original request only from them)"
            )
        }
        if cfg.decision.extAuthzGRPC && !cfg.listeners.contains(where: \.http2) {
            r.problem(
                "decision.ext_authz_grpc", node,
                "needs an HTTP/2 listener: a TLS listener (h2 is on by default) or listen[].http2: true")
        }
        let l = cfg.login
        for own in [l.startPath, l.callbackPath, l.logoutPath, l.backchannelLogoutPath, l.jwksPath]
        where own == cfg.decision.path || own == cfg.decision.forwardAuthPath
            || cfg.decision.extAuthzPrefix.map({ own.hasPrefix($0 + "/") }) == true
        {
            r.problem("decision.path", node, "\(own) is also a login endpoint; pick another decision path")
        }
    }
}
