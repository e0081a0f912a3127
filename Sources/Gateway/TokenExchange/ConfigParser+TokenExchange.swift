import OAuth
import Yams

/// A token route's `token_exchange:` section (TokenExchangeConfig.swift); docs/tokens.md
/// ("Token exchange toward the upstream") says what the gateway does with it.
extension ConfigParser {
    /// nil without `token_exchange`, or when it cannot apply (the problem is reported at its key).
    static func tokenExchange(
        _ k: RouteKeys, index: Int, auth: AuthMode, cfg: GatewayConfig, _ r: ConfigReader
    ) -> TokenExchangeConfig? {
        guard let given = k.tokenExchange, ConfigValidation.tokenExchange(k, auth: auth, r) else { return nil }
        let node = given.node
        let p = given.path
        guard let section = r.mapping(node, path: p, section: .tokenExchange) else { return nil }
        var d = TokenExchangeDraft()
        TokenExchangeConfig.keyTable.read(section, into: &d, path: p, r)
        guard let issuerGiven = d.issuer, let issuerName = issuerGiven.value else {
            r.problem(p, node, "needs issuer: NAME (the issuers: entry whose token endpoint exchanges)")
            return nil
        }
        guard let issuer = cfg.issuers[issuerName] else {
            r.problem(
                "\(p).issuer", issuerGiven.node,
                "\"\(issuerName)\" is not defined; defined: \(cfg.issuers.keys.sorted().joined(separator: ", "))")
            return nil
        }
        guard let clientGiven = d.client, let clientName = clientGiven.value else {
            r.problem(p, node, "needs client: NAME (the gateway's registration at that authorization server)")
            return nil
        }
        guard let client = cfg.clients[clientName] else {
            r.problem(
                "\(p).client", clientGiven.node,
                "\"\(clientName)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
            return nil
        }
        var out = d.cfg
        out.route = index
        out.issuer = issuerName
        out.issuerURL = issuer.issuer
        out.client = client
        out.caFile = issuer.caFile
        // A mode that is not one was reported by its row; the exchange is then not judged further.
        if d.mode?.value == .idJAG {
            out.upstream = idJAGUpstream(d, &out, node: node, path: p, cfg: cfg, r)
        } else if d.mode == nil || d.mode?.value == .exchange, d.upstreamIssuer != nil || d.upstreamClient != nil {
            r.problem(p, node, "upstream_issuer and upstream_client are for mode: id_jag")
        }
        ConfigValidation.tokenExchangeTarget(out, issuer: issuer, node: node, path: p, r)
        return out
    }

    /// `mode: id_jag`: the upstream's AS and the gateway's client there; the exchange at the
    /// caller's IdP asks for an ID-JAG whose `aud` is that AS (draft-ietf-oauth-identity-
    /// assertion-authz-grant §4.3), for the route's `resource`.
    private static func idJAGUpstream(
        _ d: TokenExchangeDraft, _ out: inout TokenExchangeConfig, node: Node, path p: String, cfg: GatewayConfig,
        _ r: ConfigReader
    ) -> TokenExchangeConfig.UpstreamAuthorizationServer? {
        for given in d.targetKeys {
            r.problem(given.path, given.node, "is set by mode: id_jag (the ID-JAG is for upstream_issuer)")
        }
        if out.dpop { r.problem("\(p).dpop", d.dpop, "is not available with mode: id_jag") }
        guard let issuerNode = d.upstreamIssuer?.node, let name = d.upstreamIssuer?.value else {
            r.problem(p, node, "mode: id_jag needs upstream_issuer: NAME (the issuers: entry of the upstream's AS)")
            return nil
        }
        guard let issuer = cfg.issuers[name] else {
            r.problem(
                "\(p).upstream_issuer", issuerNode,
                "\"\(name)\" is not defined; defined: \(cfg.issuers.keys.sorted().joined(separator: ", "))")
            return nil
        }
        if issuer.keys != .discovery {
            r.problem(
                "\(p).upstream_issuer", issuerNode,
                "\"\(name)\" needs discovery: true (its token_endpoint comes from its metadata)")
        }
        if issuer.template != nil {
            r.problem(
                "\(p).upstream_issuer", issuerNode,
                "\"\(name)\" is a {tenant} template: an ID-JAG names one authorization server")
        }
        guard let clientNode = d.upstreamClient?.node, let clientName = d.upstreamClient?.value else {
            r.problem(p, node, "mode: id_jag needs upstream_client: NAME (the gateway's registration at that AS)")
            return nil
        }
        guard let client = cfg.clients[clientName] else {
            r.problem(
                "\(p).upstream_client", clientNode,
                "\"\(clientName)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
            return nil
        }
        if out.target.resources.count != 1 {
            r.problem(p, node, "mode: id_jag needs one resource: URL (the upstream the ID-JAG and its token are for)")
        }
        // Each client is the gateway's registration at its own AS: a secret for the IdP must
        // never be sent to the upstream's AS, nor the other way.
        for (key, given, c, at) in [
            ("upstream_client", d.upstreamClient, client, name), ("client", d.client, out.client, out.issuer)
        ]
        where c.issuer != nil && c.issuer != at {
            r.problem("\(p).\(key)", given?.node, "\"\(c.name)\" is registered at \(c.issuer ?? ""), not at \(at)")
        }
        out.target.requestedTokenType = TokenExchange.idJAGTokenType
        out.target.audiences = [issuer.issuer]
        return .init(issuer: name, issuerURL: issuer.issuer, caFile: issuer.caFile, client: client)
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
