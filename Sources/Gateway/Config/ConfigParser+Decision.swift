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
        guard let m = r.mapping(node, path: "decision", known: ["enabled", "path", "ext_authz_prefix", "allow_status", "login_response"])
        else { return d }
        if let n = m["enabled"], let b = r.bool(n, path: "decision.enabled") { d.enabled = b }
        func path(_ key: String, _ value: String, _ n: Node) -> String? {
            if case .success(let norm) = PathNormalizer.normalize(target: value), norm.path == value, norm.query == nil,
               value.count > 1, !value.hasSuffix("/") { return value }
            r.problem("decision.\(key)", n, "must be a normalized path starting with / (such as /oauth2/auth), not / itself and without a trailing /")
            return nil
        }
        if let n = m["path"], let v = r.string(n, path: "decision.path"), let p = path("path", v, n) { d.path = p }
        if let n = m["ext_authz_prefix"], let v = r.string(n, path: "decision.ext_authz_prefix") {
            if v == "off" { d.extAuthzPrefix = nil } else if let p = path("ext_authz_prefix", v, n) { d.extAuthzPrefix = p }
        }
        if let n = m["allow_status"], let v = r.string(n, path: "decision.allow_status") {
            if v == "200" || v == "202" { d.allowStatus = Int(v)! } else { r.problem("decision.allow_status", n, "must be 200 or 202") }
        }
        if let n = m["login_response"], let v = r.string(n, path: "decision.login_response") {
            if let l = DecisionConfig.LoginResponse(rawValue: v) { d.loginResponse = l }
            else { r.problem("decision.login_response", n, "must be auto, 401 (nginx: error_page 401 redirects) or 302 (Traefik, Caddy)") }
        }
        if let prefix = d.extAuthzPrefix, d.path == prefix || d.path.hasPrefix(prefix + "/") {
            r.problem("decision.path", m["path"] ?? node, "lies under decision.ext_authz_prefix \(prefix); pick another path or prefix")
        }
        return d
    }

    /// Checks that need the whole config: a decision believes only trusted proxies, so without
    /// any every call would be refused.
    static func checkDecision(_ cfg: GatewayConfig, node: Node?, _ r: ConfigReader) {
        guard cfg.decision.enabled else { return }
        if cfg.trustedProxies.isEmpty {
            r.problem("decision", node, "needs trusted_proxies: list the ingress's addresses (the endpoint believes the original request only from them)")
        }
        let l = cfg.login
        for own in [l.startPath, l.callbackPath, l.logoutPath, l.backchannelLogoutPath, l.jwksPath]
        where own == cfg.decision.path || cfg.decision.extAuthzPrefix.map({ own.hasPrefix($0 + "/") }) == true {
            r.problem("decision.path", node, "\(own) is also a login endpoint; pick another decision path")
        }
    }
}
