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
        let defined = cfg.upstreams.keys.sorted()
        for (i, item) in list.enumerated() {
            let p = "routes[\(i)]"
            guard let m = r.mapping(item, path: p, section: .route) else { continue }
            let match = routeMatch(m["match"], path: "\(p).match", item: item, r)
            var upstream = ""
            if let n = m["upstream"], let s = r.string(n, path: "\(p).upstream") {
                if cfg.upstreams[s] == nil {
                    r.problem(
                        "\(p).upstream", n,
                        "\"\(s)\" is not defined; defined: \(defined.isEmpty ? "(none)" : defined.joined(separator: ", "))"
                    )
                }
                upstream = s
            } else if m["upstream"] == nil {
                r.problem(p, item, "needs upstream: NAME (defined: \(defined.joined(separator: ", ")))")
            }
            var auth = AuthMode.none
            var tokens: TokenRouteConfig?
            var clients: [String] = []
            var sessionRequirement: AuthorizationRequirement?
            if let n = m["auth"], let s = r.string(n, path: "\(p).auth") {
                if let a = AuthMode(rawValue: s) {
                    auth = a
                    switch a {
                    case .bearer, .dpop, .token, .api_key:
                        tokens = tokenRoute(m, path: p, item: item, mode: a, cfg: cfg, r)
                    case .none: break
                    case .login:
                        clients = loginClients(m, path: p, item: item, cfg: cfg, r)
                        // acr and max_age: a session short of them logs in again (step-up).
                        if let n = m["require"] { sessionRequirement = requirement(n, path: "\(p).require", r) }
                    case .login_or_token:
                        clients = loginClients(m, path: p, item: item, cfg: cfg, r)
                        // Without a session cookie, the token rules of auth: token apply.
                        tokens = tokenRoute(m, path: p, item: item, mode: .token, cfg: cfg, r)
                        // A session and a token answer to the same requirement.
                        sessionRequirement = tokens?.requirement
                    }
                } else {
                    r.problem(
                        "\(p).auth", n, "must be one of \(AuthMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            } else if m["auth"] == nil {
                r.problem("\(p).auth", item, "is missing; say auth: none explicitly for a public route")
            }
            // Read on every route, so that one without tokens hears that it has no effect there.
            let resource = protectedResource(m, path: p, auth: auth, r)
            tokens?.resource = resource
            let mcp = mcpRules(m, path: p, auth: auth, r)
            tokens?.mcp = mcp
            let exchange = tokenExchange(m, path: p, index: i, auth: auth, cfg: cfg, r)
            tokens?.tokenExchange = exchange
            if let n = m["client"], let s = r.string(n, path: "\(p).client"), !cfg.clientNames.contains(s) {
                r.problem(
                    "\(p).client", n, "\"\(s)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
            }
            // The keys of RouteConfig.keyTable; a route whose match did not parse is read for
            // its problems only.
            let http2 = cfg.upstreams[upstream]?.http2 == true
            var route = RouteConfig(
                index: i, name: p, match: match ?? RouteMatch(host: nil, path: .prefix("/"), methods: nil),
                upstream: upstream)
            route.options.upgrade.protocols = http2 ? [] : ["websocket"]
            let context = RouteKeyContext(auth: auth, matched: match != nil, cfg: cfg, r: r)
            RouteConfig.keyTable.read(m, into: &route, path: p, context)
            r.stageKeys.read(m, into: &route, path: p, context)
            // On auth: login, forward_token: true sends the session's token (on the others, the
            // caller's own: read with the token settings).
            let forwardsSessionToken =
                auth == .login && match != nil
                && m["forward_token"].flatMap { r.bool($0, path: "\(p).forward_token") } == true
            ConfigValidation.route(
                .init(
                    map: m, path: p, auth: auth, route: route, tokens: tokens,
                    forwardsSessionToken: forwardsSessionToken, http2Upstream: http2, matched: match != nil), r)
            if match != nil {
                if forwardsSessionToken, route.options.forwarding.passAccessToken == nil {
                    route.options.forwarding.passAccessToken = "Authorization"
                }
                if let req = sessionRequirement ?? tokens?.requirement {
                    checkVouchers(
                        req, tokenIssuers: tokens?.issuers ?? [], clients: clients, cfg: cfg, node: m["require"],
                        path: "\(p).require", r)
                }
                let login = LoginRouteConfig(
                    clients: clients, forwardSessionToken: route.options.forwarding.passAccessToken != nil,
                    sessionRequirement: sessionRequirement)
                route.options.auth = routeAuth(auth, login: login, tokens: tokens)
                out.append(route)
            }
        }
        templateClashes(out, list, r)
        return out
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
                    "routes[\(route.index)].match.path_template", items[route.index]["match"]?["path_template"],
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
        var match = RouteMatch(host: nil, path: .prefix("/"), methods: nil)
        RouteMatch.keyTable.read(m, into: &match, path: p, r)
        var pattern: PathPattern?
        ConfigValidation.routeMatch(m, node: node, path: p, r)
        let given = ["path", "path_prefix", "path_template"].filter { m[$0] != nil }
        if given.count == 1, let key = given.first, let n = m[key], let s = r.string(n, path: "\(p).\(key)") {
            if key == "path_template" {
                do throws(PathTemplate.Refusal) {
                    pattern = .template(try PathTemplate(parsing: s))
                } catch {
                    r.problem("\(p).path_template", n, "\"\(s)\" \(error.message)")
                }
            } else if case .success(let norm) = PathNormalizer.normalize(target: s), norm.path == s,
                norm.query == nil
            {
                // A rule must already be in normal form, or no request could ever match it.
                pattern = key == "path" ? .exact(s) : .prefix(s)
            } else {
                r.problem(
                    "\(p).\(key)", n,
                    "\"\(s)\" must start with / and be a normalized path (no //, dot-segments, query or encoded unreserved characters)"
                )
            }
        }
        guard let pattern else { return nil }
        match.path = pattern
        return match
    }
}
