import OAuth
import Yams

/// A token route's `token_exchange:` section (TokenExchangeConfig.swift); docs/tokens.md
/// ("Token exchange toward the upstream") says what the gateway does with it.
extension ConfigParser {
    /// nil without `token_exchange`, or when it cannot apply (the problem is reported at its key).
    static func tokenExchange(
        _ m: [String: Node], path route: String, index: Int, auth: AuthMode, cfg: GatewayConfig, _ r: ConfigReader
    ) -> TokenExchangeConfig? {
        guard let node = m["token_exchange"] else { return nil }
        let p = "\(route).token_exchange"
        guard auth == .bearer || auth == .dpop || auth == .token else {
            r.problem(p, node, "needs auth: bearer, dpop or token (the caller's access token is what is exchanged)")
            return nil
        }
        if let n = m["forward_token"], r.bool(n, path: "\(route).forward_token") == true {
            r.problem(
                "\(route).forward_token", n,
                "cannot be used with token_exchange: the upstream gets the exchanged token, never the caller's")
        }
        guard let section = r.mapping(node, path: p, section: .tokenExchange) else { return nil }
        guard let issuerNode = section["issuer"], let issuerName = r.string(issuerNode, path: "\(p).issuer") else {
            r.problem(p, node, "needs issuer: NAME (the issuers: entry whose token endpoint exchanges)")
            return nil
        }
        guard let issuer = cfg.issuers[issuerName] else {
            r.problem(
                "\(p).issuer", issuerNode,
                "\"\(issuerName)\" is not defined; defined: \(cfg.issuers.keys.sorted().joined(separator: ", "))")
            return nil
        }
        guard let clientNode = section["client"], let clientName = r.string(clientNode, path: "\(p).client") else {
            r.problem(p, node, "needs client: NAME (the gateway's registration at that authorization server)")
            return nil
        }
        guard let client = cfg.clients[clientName] else {
            r.problem(
                "\(p).client", clientNode,
                "\"\(clientName)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
            return nil
        }
        let endpoint = section["endpoint"].flatMap { r.string($0, path: "\(p).endpoint") }
        if let endpoint, ConfigValues.url(endpoint) == nil {
            r.problem("\(p).endpoint", section["endpoint"], "\"\(endpoint)\" is not an http(s) URL")
        }
        if endpoint == nil && issuer.keys != .discovery {
            r.problem(
                p, node, "needs endpoint: URL (the issuer \(issuerName) has no discovery metadata to take it from)")
        }
        var target = TokenExchange.Target()
        target.resources = exchangeNames(section["resource"], path: "\(p).resource", r)
        for (i, resource) in target.resources.enumerated() {
            // RFC 8707 §2: an absolute URI without a fragment.
            if case .failure(let problem) = ResourceIdentifier.parse(resource) {
                r.problem("\(p).resource[\(i)]", section["resource"], "\"\(resource)\" \(problem)")
            }
        }
        target.audiences = exchangeNames(section["audience"], path: "\(p).audience", r)
        if target.names.isEmpty {
            r.problem(
                p, node,
                "needs resource: URL or audience: NAME (what the exchanged token is for; the upstream checks its aud)")
        }
        if let n = section["scope"], let s = r.string(n, path: "\(p).scope") {
            let scopes = s.split(separator: " ")
            if scopes.isEmpty || s.utf8.contains(where: { $0 < 0x21 && $0 != 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                // RFC 6749 §3.3: space-separated NQCHAR tokens.
                r.problem("\(p).scope", n, "must be space-separated scope tokens")
            } else {
                target.scope = scopes.joined(separator: " ")
            }
        }
        if let n = section["requested_token_type"], let s = r.string(n, path: "\(p).requested_token_type") {
            switch s {
            case "access_token", TokenExchange.accessTokenType:
                target.requestedTokenType = TokenExchange.accessTokenType
            case "jwt", TokenExchange.jwtTokenType: target.requestedTokenType = TokenExchange.jwtTokenType
            default: r.problem("\(p).requested_token_type", n, "must be access_token or jwt (RFC 8693 §3)")
            }
        }
        var out = TokenExchangeConfig(
            route: index, issuer: issuerName, issuerURL: issuer.issuer, client: client, endpoint: endpoint,
            caFile: issuer.caFile,
            target: target)
        if let n = section["margin"], let v = r.duration(n, path: "\(p).margin") { out.margin = v }
        if let n = section["default_lifetime"], let v = r.duration(n, path: "\(p).default_lifetime") {
            out.defaultLifetime = v
        }
        if let n = section["negative_ttl"], let v = r.duration(n, path: "\(p).negative_ttl") { out.negativeTTL = v }
        if let n = section["dpop"], let v = r.bool(n, path: "\(p).dpop") { out.dpop = v }
        return out
    }

    /// One name or a list of names.
    private static func exchangeNames(_ node: Node?, path p: String, _ r: ConfigReader) -> [String] {
        guard let node else { return [] }
        if node.sequence != nil {
            return (r.sequence(node, path: p) ?? []).enumerated().compactMap { i, item in
                r.string(item, path: "\(p)[\(i)]").flatMap { $0.isEmpty ? nil : $0 }
            }
        }
        guard let s = r.string(node, path: p) else { return [] }
        if s.isEmpty { r.problem(p, node, "must not be empty") }
        return s.isEmpty ? [] : [s]
    }
}
