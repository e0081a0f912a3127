import Foundation
import OAuth
import Reactor
import Yams

/// The `routes` section: each route's match (host, path, methods), its upstream, its `auth`
/// and the options that `ConfigParser+RouteOptions` reads; then the templates two routes
/// would share (`templateClashes`).
extension ConfigParser {
    static func routes(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader) -> [RouteConfig] {
        guard let node else {
            r.problem("routes", nil, "is missing; add at least one route")
            return []
        }
        guard let list = r.sequence(node, path: "routes") else { return [] }
        if list.isEmpty { r.problem("routes", node, "is empty; add at least one route") }
        var out: [RouteConfig] = []
        out.reserveCapacity(list.count)
        let reading = ConfigContext(cfg: cfg, r: r)
        for (i, item) in list.enumerated() {
            let p = "routes[\(i)]"
            guard let m = r.mapping(item, path: p, section: .route) else { continue }
            var draft = RouteDraft(index: i, path: p, item: item)
            RouteConfig.keyTable.read(m, into: &draft, path: p, reading)
            if let route = route(draft, m, cfg, r) { out.append(route) }
        }
        templateClashes(out, list, r)
        return out
    }

    /// The route from its draft: the settings that depend on `auth:` read from the keys kept as
    /// given, the stages' own keys, the checks between keys. nil when its match did not
    /// parse (it was read for its problems only).
    private static func route(_ d: RouteDraft, _ m: [String: Node], _ cfg: GatewayConfig, _ r: ConfigReader)
        -> RouteConfig?
    {
        let k = d.keys
        var tokens: TokenRouteConfig?
        var clients: [String] = []
        var sessionRequirement: AuthorizationRequirement?
        switch d.auth {
        case .bearer, .dpop, .token, .api_key:
            tokens = tokenRoute(d, mode: d.auth, cfg: cfg, r)
        case .none: break
        case .login:
            clients = loginClients(d, cfg: cfg, r)
            // acr and max_age: a session short of them logs in again (step-up).
            if let n = k.require { sessionRequirement = requirement(n.node, path: n.path, r) }
        case .login_or_token:
            clients = loginClients(d, cfg: cfg, r)
            // Without a session cookie, the token rules of auth: token apply.
            tokens = tokenRoute(d, mode: .token, cfg: cfg, r)
            // A session and a token answer to the same requirement.
            sessionRequirement = tokens?.requirement
        }
        // Read on every route, so that one without tokens hears that it has no effect there.
        let resource = protectedResource(k, auth: d.auth, r)
        let mcp = mcpRules(k, auth: d.auth, r)
        let exchange = tokenExchange(k, index: d.route.index, auth: d.auth, cfg: cfg, r)
        tokens?.resource = resource
        tokens?.mcp = mcp
        tokens?.tokenExchange = exchange
        if let n = k.client, let s = r.string(n.node, path: n.path), !cfg.clientNames.contains(s) {
            r.problem(n.path, n.node, "\"\(s)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
        }
        var route = d.route
        r.stageKeys.read(
            m, into: &route, path: d.path, RouteKeyContext(auth: d.auth, matched: d.matched, cfg: cfg, r: r))
        // On auth: login, forward_token: true sends the session's token (on the others, the
        // caller's own: read with the token settings).
        let forwardsSessionToken =
            d.auth == .login && d.matched && k.forwardToken.flatMap { r.bool($0.node, path: $0.path) } == true
        ConfigValidation.route(
            .init(
                keys: k, path: d.path, auth: d.auth, route: route, tokens: tokens,
                forwardsSessionToken: forwardsSessionToken,
                http2Upstream: cfg.upstreams[route.upstream]?.http2 == true, matched: d.matched), r)
        guard d.matched else { return nil }
        if forwardsSessionToken, route.options.forwarding.passAccessToken == nil {
            route.options.forwarding.passAccessToken = "Authorization"
        }
        if let req = sessionRequirement ?? tokens?.requirement {
            checkVouchers(
                req, tokenIssuers: tokens?.issuers ?? [], clients: clients, cfg: cfg, node: k.require?.node,
                path: "\(d.path).require", r)
        }
        let login = LoginRouteConfig(
            clients: clients, forwardSessionToken: route.options.forwarding.passAccessToken != nil,
            sessionRequirement: sessionRequirement)
        route.options.auth = routeAuth(d.auth, login: login, tokens: tokens)
        return route
    }

    /// A route's `upstream:` names one of `upstreams:`; on an HTTP/2 upstream the route takes no
    /// upgrade unless it says so.
    static func routeUpstream(_ d: inout RouteDraft, _ n: Node?, path p: String, _ c: ConfigContext) {
        let defined = c.cfg.upstreams.keys.sorted()
        guard let n else {
            c.r.problem(d.path, d.item, "needs upstream: NAME (defined: \(defined.joined(separator: ", ")))")
            return
        }
        guard let s = c.r.string(n, path: p) else { return }
        if c.cfg.upstreams[s] == nil {
            c.r.problem(
                p, n,
                "\"\(s)\" is not defined; defined: \(defined.isEmpty ? "(none)" : defined.joined(separator: ", "))")
        }
        d.route.upstream = s
        if c.cfg.upstreams[s]?.http2 == true { d.route.options.upgrade.protocols = [] }
    }

    /// Two routes with templates of one shape (the same but for the variables' names) on the
    /// same host rule, whose methods overlap: the router would always pick the first for the
    /// requests both take, so the second is a mistake, not a rule. Refused, naming both.
    static func templateClashes(_ routes: [RouteConfig], _ items: [Node], _ r: ConfigReader) {
        struct Key: Hashable {
            let host: HostPattern?
            let shape: [PathTemplate.Segment]
        }
        var seen: [Key: [RouteConfig]] = [:]
        for route in routes {
            guard let t = route.match.path.template else { continue }
            let key = Key(host: route.match.host, shape: t.shape)
            for other in seen[key] ?? [] {
                let a = other.match.methods
                let b = route.match.methods
                // A method list beats no list (Router), so only two lists that share a method, or
                // two routes without one, compete for the same requests.
                if let a, let b, a.isDisjoint(with: b) { continue }
                if (a == nil) != (b == nil) { continue }
                let otherName =
                    other.name == "routes[\(other.index)]" ? other.name : "routes[\(other.index)] (\(other.name))"
                r.problem(
                    "routes[\(route.index)].match.path_template",
                    ConfigKeyPath.node(at: "match.path_template", under: items[route.index]),
                    "\"\(t.text)\" matches the same paths as \(otherName)'s \"\(other.match.path.template?.text ?? "")\" on the same host\(a == nil ? "" : " for the same methods"); the router would always choose the first (ambiguous)"
                )
                break
            }
            seen[key, default: []].append(route)
        }
    }

    /// A route's `upgrades: [websocket]` (or `[]`): the protocols it lets a client switch to.
    static func routeUpgrades(_ node: Node, path p: String, _ r: ConfigReader) -> Set<String> {
        guard let seq = r.sequence(node, path: p) else { return ["websocket"] }
        var out: Set<String> = []
        for (j, item) in seq.enumerated() {
            guard let s = r.string(item, path: "\(p)[\(j)]") else { continue }
            if s.lowercased() == "websocket" {
                out.insert("websocket")
            } else {
                r.problem(
                    "\(p)[\(j)]", item,
                    "\"\(s)\" is not a supported upgrade; the only one is websocket (or [] to refuse upgrades)")
            }
        }
        return out
    }

    static func routeMatch(_ node: Node?, path p: String, item: Node, _ r: ConfigReader) -> RouteMatch? {
        guard let node else {
            r.problem(p, item, "is missing; e.g. match: { path_prefix: / }")
            return nil
        }
        guard let m = r.mapping(node, path: p, section: .routeMatch) else { return nil }
        var draft = RouteMatchDraft()
        RouteMatch.keyTable.read(m, into: &draft, path: p, r)
        var match = draft.match
        var pattern: PathPattern?
        ConfigValidation.routeMatch(draft.paths.map(\.key), node: node, path: p, r)
        if draft.paths.count == 1, let (kind, given) = draft.paths.first, let s = r.string(given.node, path: given.path)
        {
            let n = given.node
            if kind == .template {
                do throws(PathTemplate.Refusal) {
                    pattern = .template(try PathTemplate(parsing: s))
                } catch {
                    r.problem(given.path, n, "\"\(s)\" \(error.message)")
                }
            } else if case .success(let norm) = PathNormalizer.normalize(target: s), norm.path == s,
                norm.query == nil
            {
                // A rule must already be in normal form, or no request could ever match it.
                pattern = kind == .exact ? .exact(s) : .prefix(s)
            } else {
                r.problem(
                    given.path, n,
                    "\"\(s)\" must start with / and be a normalized path (no //, dot-segments, query or encoded unreserved characters)"
                )
            }
        }
        guard let pattern else { return nil }
        match.path = pattern
        return match
    }
}
