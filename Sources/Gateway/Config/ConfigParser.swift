import Foundation
import OAuth
import Reactor
import Yams

/// YAML text → validated `GatewayConfig`, or every problem at once (data → validation →
/// bootstrap; every key in docs/configuration.md). Pure apart from reading `*_file` secrets.
public enum ConfigParser {
    static func parse(
        yaml: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        baseDirectory: String = ".", cores: Int = ProcessInfo.processInfo.activeProcessorCount
    )
        -> Result<GatewayConfig, ConfigError>
    {
        let r = ConfigReader(environment: environment, baseDirectory: baseDirectory)
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: yaml) else {
                return .failure(
                    ConfigError(problems: [ConfigProblem(path: "", line: nil, message: "the file is empty")]))
            }
            root = node
        } catch {
            return .failure(
                ConfigError(problems: [ConfigProblem(path: "", line: nil, message: "not valid YAML: \(error)")]))
        }
        var cfg = GatewayConfig()
        guard let top = r.mapping(root, path: "", section: .top) else {
            return .failure(ConfigError(problems: r.problems))
        }

        cfg.listeners = listeners(top["listen"], r)
        if let node = top["admin_listen"] {
            if let s = r.string(node, path: "admin_listen") {
                if s == "off" {
                    cfg.adminListen = nil
                } else if let a = ConfigValues.socketAddress(s) {
                    cfg.adminListen = a
                } else {
                    r.problem("admin_listen", node, "\"\(s)\" is not host:port (or off)")
                }
            }
        }
        if let node = top["workers"], let s = r.string(node, path: "workers") {
            if s == "auto" {
                cfg.workers = max(1, cores)
            } else if let n = Int(s), n >= 1, n <= 256 {
                cfg.workers = n
            } else {
                r.problem("workers", node, "must be auto or a number from 1 to 256")
            }
        } else {
            cfg.workers = max(1, cores)
        }
        if let node = top["trusted_proxies"], let list = r.sequence(node, path: "trusted_proxies") {
            for (i, item) in list.enumerated() {
                let p = "trusted_proxies[\(i)]"
                guard let s = r.string(item, path: p) else { continue }
                if let c = CIDR(s) {
                    cfg.trustedProxies.append(c)
                } else {
                    r.problem(p, item, "\"\(s)\" is not an IP address or CIDR network (10.0.0.0/8, ::1/128)")
                }
            }
        }
        if let node = top["store"] { cfg.store = store(node, r) }
        if let node = top["public_url"] { cfg.publicURLs = publicURLs(node, r) }
        if let node = top["dpop"] { cfg.dpop = dpopSettings(node, r) }
        if let node = top["limits"] { cfg.limits = limits(node, r) }
        if let node = top["access_log"], let a = accessLog(node, r) { cfg.accessLog = a }
        if let node = top["forward_early_hints"], let s = r.string(node, path: "forward_early_hints") {
            if let mode = EarlyHintsForwarding(rawValue: s) {
                cfg.earlyHints = mode
            } else {
                let modes = EarlyHintsForwarding.allCases.map(\.rawValue).joined(separator: ", ")
                r.problem("forward_early_hints", node, "must be one of \(modes)")
            }
        }
        if let node = top["log_level"], let s = r.string(node, path: "log_level") {
            let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
            if levels.contains(s) {
                cfg.logLevel = s
            } else {
                r.problem("log_level", node, "must be one of \(levels.joined(separator: ", "))")
            }
        }
        if let node = top["reserved_header_prefix"], let s = r.string(node, path: "reserved_header_prefix") {
            if s.isEmpty || !s.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }) {
                r.problem("reserved_header_prefix", node, "must be a header-name prefix such as X-Auth-")
            } else {
                cfg.reservedHeaderPrefix = s
            }
        }
        if let node = top["trusted_proxy_headers"], let list = r.sequence(node, path: "trusted_proxy_headers") {
            for (i, item) in list.enumerated() {
                let p = "trusted_proxy_headers[\(i)]"
                guard let s = r.string(item, path: p) else { continue }
                if s.isEmpty || !s.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }) {
                    r.problem(p, item, "\"\(s)\" is not a header name")
                } else {
                    cfg.trustedProxyHeaders.append(Array(s.lowercased().utf8))
                }
            }
        }
        (cfg.issuers, cfg.clients) = issuers(top["issuers"], clientsNode: top["clients"], r)
        if let node = top["token_cache"], let tc = r.mapping(node, path: "token_cache", section: .tokenCache) {
            if let n = tc["entries"], let s = r.string(n, path: "token_cache.entries") {
                if let v = Int(s), v >= 0, v <= 10_000_000 {
                    cfg.tokenCacheEntries = v
                } else {
                    r.problem("token_cache.entries", n, "must be a number from 0 (off) to 10000000")
                }
            }
            if let n = tc["ttl"], let v = r.duration(n, path: "token_cache.ttl") { cfg.tokenCacheTTL = max(v, 1) }
        }
        if let node = top["session"] { cfg.session = session(node, r) }
        if let node = top["login"] { cfg.login = login(node, r) }
        if let node = top["decision"] { cfg.decision = decision(node, r) }
        if let node = top["pages_dir"] { cfg.pages = pages(node, r) }
        cfg.upstreams = upstreams(top["upstreams"], r)
        cfg.assertionKeys = assertionKeys(top["identity_assertion_keys"], r)
        cfg.routes = routes(top["routes"], cfg, r)
        cfg.protectedResources = protectedResources(cfg, routesNode: top["routes"], r)
        checkDecision(cfg, node: top["decision"], r)
        checkUserinfoClients(cfg, r)
        if cfg.publicURLs.isEmpty && cfg.trustedProxies.isEmpty,
            let route = cfg.routes.first(where: { $0.auth.tokenRoute?.dpop != nil })
        {
            // RFC 9449 §4.3 check 9 compares htu with the URL the client addressed; a client's
            // own Host header cannot say that (it would let a proof for another origin in).
            r.problem(
                "public_url", top["routes"],
                "\(route.name) checks DPoP proofs: set public_url (the origin clients use, e.g. https://api.example.com) or trusted_proxies (whose X-Forwarded-Proto/-Host then say it)"
            )
        }
        // Every identity header any route sets is stripped from every request on every route.
        var stripped = Set(IdentityHeaders.defaults.map { $0.0.lowercased() })
        // The default key-thumbprint header too, even where no route sets it: an upstream
        // might read it whatever the config says.
        if let jkt = DPoPRouteConfig().jktHeader { stripped.insert(jkt.lowercased()) }
        // Likewise the default assertion header: an upstream may check it on every path.
        stripped.insert(IdentityAssertionConfig.defaultHeader.lowercased())
        for route in cfg.routes {
            stripped.formUnion(route.options.ownHeaders)
            stripped.formUnion(route.identityHeaders.headerNames.map { $0.lowercased() })
            if let h = route.auth.tokenRoute?.dpop?.jktHeader { stripped.insert(h.lowercased()) }
        }
        cfg.strippedIdentityHeaders = stripped.sorted().map { Array($0.utf8) }

        checkCookieDomain(cfg, node: top["session"], r)
        cfg.warnings = warnings(cfg, top: top)
        if cfg.listeners.isEmpty && top["listen"] == nil {
            cfg.listeners = [ListenerConfig(address: SocketAddress(host: "0.0.0.0", port: 8080), tls: nil)]
        }
        if let admin = cfg.adminListen, cfg.listeners.contains(where: { $0.address == admin }) {
            r.problem("admin_listen", top["admin_listen"], "must differ from every public listen address")
        }
        return r.problems.isEmpty ? .success(cfg) : .failure(ConfigError(problems: r.problems))
    }

    /// Reads and parses a file; relative `*_file` paths resolve next to it.
    /// `environment` (for `${VAR}` references): nil reads the process's own.
    public static func load(path: String, environment: [String: String]? = nil) -> Result<GatewayConfig, ConfigError> {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            return .failure(
                ConfigError(problems: [ConfigProblem(path: "", line: nil, message: "cannot read config file \(path)")]))
        }
        let dir = (path as NSString).deletingLastPathComponent
        return parse(
            yaml: text, environment: environment ?? ProcessInfo.processInfo.environment,
            baseDirectory: dir.isEmpty ? "." : dir)
    }

    private static func listeners(_ node: Node?, _ r: ConfigReader) -> [ListenerConfig] {
        guard let node else { return [] }
        let items: [(Node, String)]
        if case .sequence(let seq) = node {
            items = seq.enumerated().map { ($1, "listen[\($0)]") }
        } else {
            items = [(node, "listen")]
        }
        var out: [ListenerConfig] = []
        for (item, p) in items {
            var addressNode = item
            var tls: TLSFiles?
            var http2: Bool?
            if case .mapping = item {
                guard let m = r.mapping(item, path: p, section: .listen) else { continue }
                if let h = m["http2"] { http2 = r.bool(h, path: "\(p).http2") }
                guard let a = m["address"] else {
                    r.problem(p, item, "needs address: host:port")
                    continue
                }
                addressNode = a
                if let t = m["tls"], let tm = r.mapping(t, path: "\(p).tls", section: .listenTLS) {
                    let cert = tm["cert_file"].flatMap { r.string($0, path: "\(p).tls.cert_file") }
                    let key = tm["key_file"].flatMap { r.string($0, path: "\(p).tls.key_file") }
                    if let cert, let key {
                        tls = TLSFiles(certFile: cert, keyFile: key)
                    } else {
                        r.problem("\(p).tls", t, "needs both cert_file and key_file")
                    }
                }
            }
            guard let s = r.string(addressNode, path: p) else { continue }
            guard let a = ConfigValues.socketAddress(s) else {
                r.problem(p, addressNode, "\"\(s)\" is not host:port (e.g. 0.0.0.0:8080)")
                continue
            }
            out.append(ListenerConfig(address: a, tls: tls, http2: http2))
        }
        return out
    }

    private static func limits(_ node: Node, _ r: ConfigReader) -> Limits {
        var l = Limits()
        guard let m = r.mapping(node, path: "limits", section: .limits) else { return l }
        bodyPace(m, &l, r)
        if let n = m["max_tunnels"], let s = r.string(n, path: "limits.max_tunnels") {
            if let v = Int(s), v >= 1, v <= 1_000_000 {
                l.maxTunnels = v
            } else {
                r.problem("limits.max_tunnels", n, "must be a number from 1 to 1000000")
            }
        }
        if let n = m["tunnel_idle_timeout"], let v = r.duration(n, path: "limits.tunnel_idle_timeout") {
            if v < 0.1 {
                r.problem("limits.tunnel_idle_timeout", n, "must be at least 100ms (e.g. 300s)")
            } else {
                l.tunnelIdleTimeout = v
            }
        }
        if let n = m["max_connections"], let s = r.string(n, path: "limits.max_connections") {
            if let v = Int(s), v >= 1, v <= 1_000_000 {
                l.maxConnections = v
            } else {
                r.problem("limits.max_connections", n, "must be a number from 1 to 1000000")
            }
        }
        if let n = m["header_timeout"], let v = r.duration(n, path: "limits.header_timeout") {
            l.headerTimeout = max(v, 0.1)
        }
        if let n = m["body_timeout"], let v = r.duration(n, path: "limits.body_timeout") { l.bodyTimeout = max(v, 0.1) }
        if let n = m["continue_timeout"], let v = r.duration(n, path: "limits.continue_timeout") {
            if v > 30 {
                r.problem(
                    "limits.continue_timeout", n,
                    "must be at most 30s (e.g. 1s; 0 answers 100 at once without asking the upstream)")
            } else {
                l.continueTimeout = v
            }
        }
        if let n = m["max_body_size"], let v = r.size(n, path: "limits.max_body_size") { l.maxBodySize = v }
        if let n = m["max_header_size"], let v = r.size(n, path: "limits.max_header_size") {
            if v < 1024 { r.problem("limits.max_header_size", n, "must be at least 1KB") } else { l.maxHeaderSize = v }
        }
        if let n = m["client_idle_timeout"], let v = r.duration(n, path: "limits.client_idle_timeout") {
            l.clientIdleTimeout = max(v, 1)
        }
        if let n = m["shutdown_grace"], let v = r.duration(n, path: "limits.shutdown_grace") { l.shutdownGrace = v }
        return l
    }

    private static func upstreams(_ node: Node?, _ r: ConfigReader) -> [String: UpstreamConfig] {
        guard let node else { return [:] }
        guard let m = r.mapping(node, path: "upstreams", section: nil) else { return [:] }
        var out: [String: UpstreamConfig] = [:]
        for (name, value) in m {
            let p = "upstreams.\(name)"
            guard let u = r.mapping(value, path: p, section: .upstream) else { continue }
            guard let urlNode = u["url"] else {
                r.problem(p, value, "needs url: http://host:port")
                continue
            }
            guard let s = r.string(urlNode, path: "\(p).url") else { continue }
            guard let url = ConfigValues.url(s) else {
                r.problem(
                    "\(p).url", urlNode,
                    "\"\(s)\" is not an http URL like http://127.0.0.1:3000 (no query, fragment or user)")
                continue
            }
            var up = UpstreamConfig(name: name, host: url.host, port: url.port, basePath: url.path)
            if url.scheme == "https" {
                (up.tls, up.tlsContext) = upstreamTLS(u["tls"], path: "\(p).tls", host: url.host, r)
            } else if let t = u["tls"] {
                r.problem(
                    "\(p).tls", t,
                    "applies only to an https:// url; make the url https://\(url.host):\(url.port)\(url.path) or remove tls"
                )
            }
            if let n = u["connect_timeout"], let v = r.duration(n, path: "\(p).connect_timeout") {
                up.connectTimeout = max(v, 0.001)
            }
            if let n = u["timeout"], let v = r.duration(n, path: "\(p).timeout") { up.timeout = max(v, 0.001) }
            if let n = u["max_idle_connections"], let s = r.string(n, path: "\(p).max_idle_connections") {
                if let v = Int(s), v >= 0 {
                    up.maxIdleConnections = v
                } else {
                    r.problem("\(p).max_idle_connections", n, "must be a number ≥ 0")
                }
            }
            upstreamCap(u, path: p, &up, r)
            if let n = u["host_header"], let s = r.string(n, path: "\(p).host_header") {
                switch s {
                case "upstream": up.hostHeader = .upstream
                case "preserve": up.hostHeader = .preserve
                default:
                    if HostNormalizer.normalize(s) != nil {
                        up.hostHeader = .fixed(s)
                    } else {
                        r.problem("\(p).host_header", n, "must be upstream, preserve, or a host name")
                    }
                }
            }
            out[name] = up
        }
        return out
    }

    private static func routes(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader) -> [RouteConfig] {
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
            let upgrades = m["upgrades"].map { routeUpgrades($0, path: "\(p).upgrades", r) } ?? ["websocket"]
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
    private static func routeUpgrades(_ node: Node, path p: String, _ r: ConfigReader) -> Set<String> {
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

    private static func routeMatch(_ node: Node?, path p: String, item: Node, _ r: ConfigReader) -> RouteMatch? {
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
