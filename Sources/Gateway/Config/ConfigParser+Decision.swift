import Yams

/// `decision:` (see `DecisionConfig`; its keys in `DecisionConfig.keyTable`).
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
        DecisionConfig.keyTable.read(m, into: &d, path: "decision", r)
        ConfigValidation.decision(d, m, node: node, r)
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
