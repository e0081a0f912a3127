import Foundation
import OAuth
import Reactor
import Yams

/// The `routes` section: each route's match (host, path, methods), its upstream, its `auth`
/// and the options that `ConfigParser+RouteOptions` reads.
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
                    case .bearer, .dpop, .token:
                        tokens = tokenRoute(m, path: p, item: item, mode: a, issuers: cfg.issuers, r)
                    case .none: break
                    case .login:
                        clients = loginClients(m, path: p, item: item, cfg: cfg, r)
                        if let n = m["require"] { sessionRequirement = requirement(n, path: "\(p).require", r) }
                        for key in ["issuers", "dpop", "token_in_query", "token_in_body"] where m[key] != nil {
                            r.problem(
                                "\(p).\(key)", m[key],
                                "has no effect with auth: login (use auth: login_or_token to accept tokens too)")
                        }
                    case .login_or_token:
                        clients = loginClients(m, path: p, item: item, cfg: cfg, r)
                        // Without a session cookie, the token rules of auth: token apply.
                        tokens = tokenRoute(m, path: p, item: item, mode: .token, issuers: cfg.issuers, r)
                        // A session and a token answer to the same requirement.
                        sessionRequirement = tokens?.requirement
                        for key in ["token_in_query", "token_in_body"] where m[key] != nil {
                            // A credential in the URL or body would reach the upstream on the session path.
                            r.problem("\(p).\(key)", m[key], "is not accepted with auth: login_or_token")
                        }
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
            if tokens?.tokenExchange != nil, tokens?.dpop?.forwardProof == true {
                r.problem(
                    "\(p).dpop.forward_proof", m["dpop"],
                    "cannot be used with token_exchange: the caller's proof is for the caller's token, which the upstream never gets"
                )
            }
            if let n = m["close_at_token_expiry"], tokens == nil {
                r.problem(
                    "\(p).close_at_token_expiry", n,
                    "needs auth: bearer, dpop, token or login_or_token (it ends tunnels opened with an access token)")
            }
            if auth == .none {
                for key in ["issuers", "require", "forward_token", "token_in_query", "token_in_body", "dpop"]
                where m[key] != nil {
                    r.problem("\(p).\(key)", m[key], "has no effect with auth: none; remove it or set auth")
                }
            }
            if let n = m["client"], let s = r.string(n, path: "\(p).client"), !cfg.clientNames.contains(s) {
                r.problem(
                    "\(p).client", n, "\"\(s)\" is not defined; defined: \(cfg.clientNames.joined(separator: ", "))")
            }
            for key in ["client", "clients"] where m[key] != nil && auth != .login && auth != .login_or_token {
                r.problem(
                    "\(p).\(key)", m[key], "has no effect with auth: \(auth.rawValue) (it names the client of a login)")
            }
            var headers = IdentityHeaders.standard
            if let n = m["headers"], let h = identityHeaders(n, path: "\(p).headers", r) { headers = h }
            var name = p
            if let n = m["name"], let s = r.string(n, path: "\(p).name") { name = s }
            // HTTP/2 has no Upgrade (RFC 9113 §8.6): an HTTP/2 upstream takes no WebSocket.
            let http2 = cfg.upstreams[upstream]?.http2 == true
            let upgrades =
                m["upgrades"].map { routeUpgrades($0, path: "\(p).upgrades", r) } ?? (http2 ? [] : ["websocket"])
            if http2, !upgrades.isEmpty, let n = m["upgrades"] {
                r.problem(
                    "\(p).upgrades", n,
                    "upstream \(upstream) speaks HTTP/2, which has no Upgrade; remove upgrades or give this route an http1 upstream"
                )
            }
            if let match {
                // The auth settings are final once the options are read (pass_access_token).
                var route = RouteConfig(
                    index: i, name: name, match: match, upstream: upstream, auth: .none, identityHeaders: headers)
                route.upgrades = upgrades
                // On auth: login, forward_token: true sends the session's token (on the others, the
                // caller's own: read with the token settings).
                let forwardsSessionToken =
                    auth == .login && m["forward_token"].flatMap { r.bool($0, path: "\(p).forward_token") } == true
                route.options = routeOptions(
                    m, path: p, route: route, auth: auth, forwardsSessionToken: forwardsSessionToken, cfg: cfg, r)
                if let req = sessionRequirement ?? tokens?.requirement {
                    checkVouchers(
                        req, tokenIssuers: tokens?.issuers ?? [], clients: clients, cfg: cfg, node: m["require"],
                        path: "\(p).require", r)
                }
                let login = LoginRouteConfig(
                    clients: clients, forwardSessionToken: route.options.passAccessToken != nil,
                    sessionRequirement: sessionRequirement)
                route.auth = routeAuth(auth, login: login, tokens: tokens)
                out.append(route)
            }
        }
        return out
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
        var host: HostPattern?
        if let n = m["host"], let s = r.string(n, path: "\(p).host") {
            host = HostPattern(s)
            if host == nil { r.problem("\(p).host", n, "\"\(s)\" is not a host name or *.wildcard") }
        }
        var pattern: PathPattern?
        switch (m["path"], m["path_prefix"]) {
        case (.some, .some): r.problem(p, node, "give path or path_prefix, not both")
        case (nil, nil): r.problem(p, node, "needs path: /exact or path_prefix: /prefix/")
        case (let n?, nil), (nil, let n?):
            let key = m["path"] != nil ? "path" : "path_prefix"
            if let s = r.string(n, path: "\(p).\(key)") {
                // A rule must already be in normal form, or no request could ever match it.
                if case .success(let norm) = PathNormalizer.normalize(target: s), norm.path == s, norm.query == nil {
                    pattern = key == "path" ? .exact(s) : .prefix(s)
                } else {
                    r.problem(
                        "\(p).\(key)", n,
                        "\"\(s)\" must start with / and be a normalized path (no //, dot-segments, query or encoded unreserved characters)"
                    )
                }
            }
        }
        var methods: Set<HTTPMethod>?
        if let n = m["methods"], let seq = r.sequence(n, path: "\(p).methods") {
            var set = Set<HTTPMethod>()
            for (j, item) in seq.enumerated() {
                guard let s = r.string(item, path: "\(p).methods[\(j)]") else { continue }
                if let method = HTTPMethod(rawValue: s.uppercased()) {
                    set.insert(method)
                } else {
                    r.problem(
                        "\(p).methods[\(j)]", item,
                        "\"\(s)\" is not one of \(HTTPMethod.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            }
            methods = set
        }
        guard let pattern else { return nil }
        return RouteMatch(host: host, path: pattern, methods: methods)
    }
}
