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
            // No tag resolution: every value is read as a string by ConfigReader, and Yams'
            // default resolver compiles its rules with NSRegularExpression, which loads
            // ICU's tables into every process for nothing (about 3 MB of RSS).
            guard let node = try Yams.compose(yaml: yaml, .basic) else {
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
        if let node = top["admin_listen"] { adminListener(node, &cfg, r) }
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
        cfg.tracing = tracing(top["tracing"], r)
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
        fapi2Routes(&cfg.routes, issuers: cfg.issuers, routesNode: top["routes"], r)
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
        checkCookieDomain(cfg, node: top["session"], r)
        cfg.warnings = warnings(cfg, top: top)
        if cfg.listeners.isEmpty && top["listen"] == nil {
            cfg.listeners = [ListenerConfig(address: SocketAddress(host: "0.0.0.0", port: 8080), tls: nil)]
        }
        if let admin = cfg.adminListen, cfg.listeners.contains(where: { $0.address == admin }) {
            r.problem("admin_listen", top["admin_listen"], "must differ from every public listen address")
        }
        guard r.problems.isEmpty else { return .failure(ConfigError(problems: r.problems)) }
        cfg.finish()
        return .success(cfg)
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
}
