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
        guard ConfigValidation.tokenExchange(m, route: route, auth: auth, r) else { return nil }
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
        var out = TokenExchangeConfig(
            route: index, issuer: issuerName, issuerURL: issuer.issuer, client: client, endpoint: endpoint,
            caFile: issuer.caFile, target: TokenExchange.Target())
        TokenExchangeConfig.keyTable.read(section, into: &out, path: p, r)
        ConfigValidation.tokenExchangeTarget(out, issuer: issuer, node: node, path: p, r)
        return out
    }

    /// One name or a list of names.
    static func exchangeNames(_ node: Node, path p: String, _ r: ConfigReader) -> [String] {
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
