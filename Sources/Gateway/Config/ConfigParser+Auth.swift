import JOSE
import OAuth
import Yams

/// `issuers:` (`IssuerConfig.keyTable`) and the authentication keys of a route (`issuers`, `require`, `headers`,
/// `forward_token`, `token_in_query`).
extension ConfigParser {
    static func issuers(_ node: Node?, clientsNode: Node?, _ r: ConfigReader) -> (
        issuers: [String: IssuerConfig], clients: [String: ClientConfig]
    ) {
        let (read, introspections) = issuers(node, r)
        var issuers = read
        let clients = clients(clientsNode, issuers: issuers, r)
        for (name, given) in introspections where issuers[name] != nil {
            let discovery = issuers[name]?.keys == .discovery
            var parsed = introspection(given.node, path: given.path, clients: clients, discovery: discovery, r)
            if issuers[name]?.profile == .fapi2, parsed != nil {
                fapi2Introspection(&parsed!, given.node, path: given.path, r)
            }
            issuers[name]?.introspection = parsed
        }
        return (issuers, clients)
    }

    /// The issuers, and the `introspection` of each that has one (read once the clients are).
    private static func issuers(_ node: Node?, _ r: ConfigReader) -> (
        [String: IssuerConfig], [(String, GivenNode)]
    ) {
        guard let node, let m = r.mapping(node, path: "issuers", section: nil) else { return ([:], []) }
        var out: [String: IssuerConfig] = [:]
        var introspections: [(String, GivenNode)] = []
        for (name, value) in m {
            let p = "issuers.\(name)"
            guard let i = r.mapping(value, path: p, section: .issuer) else { continue }
            var d = IssuerDraft(name: name)
            IssuerConfig.keyTable.read(i, into: &d, path: p, r)
            guard let issuer = d.issuer else {
                r.problem(p, value, "needs issuer: the exact iss value of its tokens (https://…)")
                continue
            }
            ConfigValidation.issuerKeySource(
                discovery: d.discovery, jwksURI: d.jwksURI != nil, jwksFile: d.jwksFile != nil, path: p, node: value,
                r)
            guard let keys = d.keySource else { continue }
            var cfg = d.cfg
            cfg.keys = keys
            cfg.explicitKeys = Set(i.keys)
            issuerTemplate(&cfg, d, issuer: issuer, path: p, node: value, r)
            if cfg.audiences.isEmpty {
                r.problem(
                    "\(p).audiences", value,
                    "is required: the audience(s) this gateway's APIs go by (RFC 9068 §4: tokens for another audience must be refused)"
                )
            }
            if cfg.profile == .fapi2 { fapi2Issuer(&cfg, algorithms: d.algorithms, path: p, r) }
            out[name] = cfg
            if let given = d.introspection { introspections.append((name, given)) }
        }
        return (out, introspections)
    }

    /// Reads the access-token settings of a `bearer`, `dpop` or `token` route from the keys its
    /// draft kept; reports problems at their paths.
    static func tokenRoute(_ d: RouteDraft, mode: AuthMode, cfg gateway: GatewayConfig, _ r: ConfigReader)
        -> TokenRouteConfig?
    {
        let k = d.keys
        let issuers = gateway.issuers
        let keySets = apiKeySets(k.apiKeys, route: d, mode: mode, sets: gateway.apiKeySets, r)
        if mode == .api_key {
            guard let keySets else { return nil }
            if let n = k.issuers {
                r.problem(n.path, n.node, "auth: api_key takes keys only; say auth: bearer for tokens beside keys")
            }
            var cfg = TokenRouteConfig(issuers: [])
            cfg.apiKeySets = keySets
            cfg.apiKeys = APIKeyLocations(sets: keySets, gateway.apiKeySets)
            cfg.keysOnly = true
            if let n = k.require { cfg.requirement = requirement(n.node, path: n.path, r) }
            for n in [k.tokenInQuery, k.tokenInBody, k.dpop, k.forwardToken, k.closeAtTokenExpiry].compactMap({ $0 }) {
                r.problem(n.path, n.node, "has no effect with auth: api_key (it is about tokens)")
            }
            return cfg
        }
        guard let given = k.issuers, let seq = r.sequence(given.node, path: given.path), !seq.isEmpty else {
            r.problem(
                "\(d.path).issuers", d.item,
                "auth: \(mode.rawValue) needs issuers: [NAME, …] (defined: \(issuers.keys.sorted().joined(separator: ", ")))"
            )
            return nil
        }
        var cfg = TokenRouteConfig(issuers: [])
        cfg.apiKeySets = keySets ?? []
        cfg.apiKeys = APIKeyLocations(sets: cfg.apiKeySets, gateway.apiKeySets)
        for (j, iss) in seq.enumerated() {
            guard let s = r.string(iss, path: "\(given.path)[\(j)]") else { continue }
            if issuers[s] == nil {
                r.problem(
                    "\(given.path)[\(j)]", iss,
                    "\"\(s)\" is not defined; defined: \(issuers.keys.sorted().joined(separator: ", "))")
            } else {
                cfg.issuers.append(s)
            }
        }
        let issValues = cfg.issuers.compactMap { issuers[$0]?.issuer }
        if Set(issValues).count != issValues.count {
            r.problem(given.path, given.node, "two of these issuers have the same issuer URL")
        }
        if let n = k.require { cfg.requirement = requirement(n.node, path: n.path, r) }
        if let n = k.forwardToken, let b = r.bool(n.node, path: n.path) { cfg.forwardToken = b }
        if let n = k.closeAtTokenExpiry, let b = r.bool(n.node, path: n.path) { cfg.closeAtTokenExpiry = b }
        if mode == .dpop {
            // RFC 9449 §7.1 sends DPoP tokens in the Authorization header only.
            for n in [k.tokenInQuery, k.tokenInBody].compactMap({ $0 }) {
                r.problem(
                    n.path, n.node, "has no effect with auth: dpop (DPoP tokens come only in the Authorization header)")
            }
        }
        if let n = k.tokenInQuery, let b = r.bool(n.node, path: n.path) { cfg.tokenInQuery = b }
        if let n = k.tokenInBody, let b = r.bool(n.node, path: n.path) { cfg.tokenInBody = b }
        if keySets != nil {
            // One credential per request (RFC 6750 §2): a key beside a token in the URL or a
            // form body could not be told apart without reading the body first.
            for (given, on) in [(k.tokenInQuery, cfg.tokenInQuery), (k.tokenInBody, cfg.tokenInBody)] where on {
                r.problem(
                    given?.path ?? d.path, given?.node,
                    "cannot be used with api_keys (keys come in a field, tokens in Authorization)")
            }
        }
        if mode == .bearer {
            if let n = k.dpop {
                r.problem(n.path, n.node, "has no effect with auth: bearer; use auth: dpop or auth: token")
            }
        } else {
            let proofs = k.dpop.map { dpopRoute($0.node, path: $0.path, r) } ?? DPoPRouteConfig()
            cfg.schemes = mode == .dpop ? .dpop(proofs) : .bearerOrDPoP(proofs)
        }
        return cfg
    }

    /// `api_keys:` on a route: the key sets it names, each defined; nil when it names none.
    /// Keys stand beside tokens on `bearer` and `token` routes and alone on `api_key` ones;
    /// never where proof of possession is the point (`dpop`) or on a login route.
    static func apiKeySets(
        _ given: GivenNode?, route d: RouteDraft, mode: AuthMode, sets: [String: APIKeySetConfig], _ r: ConfigReader
    ) -> [String]? {
        let defined = sets.keys.sorted().joined(separator: ", ")
        guard let given else {
            if mode == .api_key {
                r.problem("\(d.path).api_keys", d.item, "auth: api_key needs api_keys: NAME (defined: \(defined))")
            }
            return nil
        }
        let n = given.node
        guard mode == .bearer || mode == .token || mode == .api_key else {
            r.problem(
                given.path, n,
                "keys are refused where proof of possession is required (auth: dpop) and on login routes")
            return nil
        }
        let nodes: [Node]
        if n.scalar != nil { nodes = [n] } else { nodes = r.sequence(n, path: given.path) ?? [] }
        var names: [String] = []
        for (j, item) in nodes.enumerated() {
            guard let s = r.string(item, path: "\(given.path)[\(j)]") else { continue }
            guard sets[s] != nil else {
                r.problem(given.path, item, "\"\(s)\" is not defined; defined: \(defined)")
                continue
            }
            if !names.contains(s) { names.append(s) }
        }
        return names.isEmpty ? nil : names
    }

    /// The route's `RouteAuth` from `auth:` and the parts read for it. A part that did not
    /// parse (a problem was reported, so the config is refused) is left out: a
    /// `login_or_token` route keeps the other part, any other route falls back to `none`.
    static func routeAuth(_ mode: AuthMode, login: LoginRouteConfig?, tokens: TokenRouteConfig?) -> RouteAuth {
        switch (mode, login, tokens) {
        case (.none, _, _): .none
        case (.bearer, _, let tokens?), (.dpop, _, let tokens?), (.token, _, let tokens?), (.api_key, _, let tokens?):
            .tokens(tokens)
        case (.login, let login?, _): .login(login)
        case (.login_or_token, let login?, let tokens?): .loginOrToken(login, tokens)
        case (.login_or_token, let login?, nil): .login(login)
        case (.login_or_token, nil, let tokens?): .tokens(tokens)
        case (.bearer, _, nil), (.dpop, _, nil), (.token, _, nil), (.api_key, _, nil), (.login, nil, _),
            (.login_or_token, nil, nil):
            .none
        }
    }

    static func requirement(_ node: Node, path p: String, _ r: ConfigReader) -> AuthorizationRequirement {
        var req = AuthorizationRequirement()
        guard let m = r.mapping(node, path: p, section: .requirement) else { return req }
        AuthorizationRequirement.keyTable.read(m, into: &req, path: p, r)
        return req
    }

    /// `require.claims`: per claim path a value, or one rule of `claimRuleKeyTable`.
    static func claimRules(_ n: Node, path p: String, _ req: inout AuthorizationRequirement, _ r: ConfigReader) {
        if let claims = r.mapping(n, path: p, section: nil) {
            for (key, value) in claims.sorted(by: { $0.key < $1.key }) {
                let cp = "\(p).\(key)"
                guard let path = ClaimPath(key) else {
                    r.problem(cp, value, "is not a claim path (name or a.b.c)")
                    continue
                }
                if case .scalar = value, let s = r.string(value, path: cp) {
                    req.claims.append((path, .equals(s)))
                } else if let rule = r.mapping(value, path: cp, section: .claimRule),
                    rule.count == 1
                {
                    var rules: [AuthorizationRequirement.Rule] = []
                    AuthorizationRequirement.claimRuleKeyTable.read(rule, into: &rules, path: cp, r)
                    req.claims += rules.map { (path, $0) }
                } else {
                    r.problem(cp, value, "give a value, or one of { equals: v }, { one_of: [..] }, { contains: v }")
                }
            }
        }
    }

    /// `headers: { Header-Name: claim.path, Other-Name: "{variable}" }` — replaces the defaults.
    /// A `{variable}` names one of the route's `path_template` variables; `match`: the route's
    /// path rule, nil when its match did not parse (then variables are not checked against it).
    static func identityHeaders(_ node: Node, path p: String, match: PathPattern?, _ r: ConfigReader)
        -> IdentityHeaders?
    {
        guard let m = r.mapping(node, path: p, section: nil) else { return nil }
        var mapping: [(header: String, path: ClaimPath)] = []
        var parameters: [(header: String, name: String)] = []
        for (header, value) in m.sorted(by: { $0.key < $1.key }) {
            guard !header.isEmpty, header.utf8.allSatisfy(HeaderRules.isTokenChar) else {
                r.problem("\(p).\(header)", value, "is not a valid header name")
                continue
            }
            let lower = header.lowercased()
            if HeaderRules.forwardsRequestHeader(header, listed: [], reservedPrefix: nil) == false
                || lower == "authorization" || lower == "cookie"
            {
                r.problem(
                    "\(p).\(header)", value, "cannot carry identity (it is a header the gateway or the protocol owns)")
                continue
            }
            // `X-Id: {id}` unquoted is a YAML flow mapping, not the text "{id}".
            if let inner = value.mapping, inner.count == 1, let key = inner.first?.key.string,
                inner.first?.value.null != nil || inner.first?.value.string == ""
            {
                r.problem(
                    "\(p).\(header)", value,
                    "write a path variable in quotes, \"{\(key)}\" (unquoted, YAML reads a mapping)")
                continue
            }
            guard let s = r.string(value, path: "\(p).\(header)") else { continue }
            if s.count >= 2 && s.hasPrefix("{") && s.hasSuffix("}") {
                let name = String(s.dropFirst().dropLast())
                if let message = pathVariableProblem(name, match: match) {
                    r.problem("\(p).\(header)", value, "\"\(s)\" \(message)")
                } else {
                    parameters.append((header, name))
                }
                continue
            }
            guard let path = ClaimPath(s) else {
                r.problem(
                    "\(p).\(header)", value, "must be a claim path such as sub or realm_access.roles, or \"{variable}\""
                )
                continue
            }
            mapping.append((header, path))
        }
        return IdentityHeaders(mapping: mapping, parameters: parameters)
    }

    /// Why `{name}` in a header mapping names no variable of the route's template; nil when it does.
    private static func pathVariableProblem(_ name: String, match: PathPattern?) -> String? {
        guard let match else { return nil }
        guard let template = match.template else {
            return "names a path variable, and this route's match has no path_template"
        }
        guard template.names.contains(name) else {
            return
                "is not a variable of match.path_template \"\(template.text)\" (its variables: \(template.names.joined(separator: ", ")))"
        }
        return nil
    }
}
