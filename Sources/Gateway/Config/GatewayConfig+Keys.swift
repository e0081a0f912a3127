import Reactor
import Yams

extension GatewayConfig {
    /// The top-level keys, each said once: its reference row (type and default, checked by
    /// ConfigReferenceTests) and its reader, a plain value's here and a section's by its
    /// `ConfigParser` reader. Read in this order, but a key with a `readAt` only after the
    /// modules read at that point (ConfigParser.parse): the login after the rate limits it
    /// names, the routes after everything.
    static let keyTable = ConfigKeyTable<GatewayConfig, ConfigReader>([
        .init(
            "listen", type: "host:port, a list of them, or mappings (`listen[]`)", default: "`0.0.0.0:8080`",
            reader: .always { cfg, n, _, r in cfg.listeners = ConfigParser.listeners(n, r) }),
        .init(
            "admin_listen", type: "host:port, `off`, or `{ address, tls }` (`tls` as `listen[].tls`)",
            default: "`127.0.0.1:9901`", reader: .value { cfg, n, _, r in ConfigParser.adminListener(n, &cfg, r) }),
        .init("workers", type: "`auto` or number", default: "`auto` (one per core)") { cfg, n, p, r in
            // Left out: one per core (ConfigParser.parse sets that before the table is read).
            guard let s = r.string(n, path: p), s != "auto" else { return }
            if let v = Int(s), v >= 1, v <= 256 {
                cfg.workers = v
            } else {
                r.problem(p, n, "must be auto or a number from 1 to 256")
            }
        },
        .init(
            "trusted_proxies", type: "list of IP addresses or CIDR networks", default: "`[]` (no peer is trusted)"
        ) { cfg, n, p, r in
            guard let list = r.sequence(n, path: p) else { return }
            for (i, item) in list.enumerated() {
                guard let s = r.string(item, path: "\(p)[\(i)]") else { continue }
                if let c = CIDR(s) {
                    cfg.trustedProxies.append(c)
                } else {
                    r.problem("\(p)[\(i)]", item, "\"\(s)\" is not an IP address or CIDR network (10.0.0.0/8, ::1/128)")
                }
            }
        },
        .init(
            "store", type: "`memory`, a Redis URL, or mapping (below)", default: "`memory`",
            reader: .value { cfg, n, _, r in cfg.store = ConfigParser.store(n, r) }),
        .init(
            "session", type: "mapping (below)", default: "each key's default",
            reader: .value { cfg, n, _, r in cfg.session = ConfigParser.session(n, r) }),
        .init(
            "issuers", type: "mapping of `NAME` to issuer (below)", default: "none", reader: .group(issuersAndClients)),
        .init(
            "clients", type: "mapping of `NAME` to client (below)", default: "none", reader: .group(issuersAndClients)),
        .init(
            "upstreams", type: "mapping of `NAME` to upstream (below)", default: "none",
            reader: .always { cfg, n, _, r in cfg.upstreams = ConfigParser.upstreams(n, r) }),
        // After every other section and the modules': a route names the issuers, clients,
        // upstreams and policies they define.
        .init(
            "routes", type: "list of routes (below)", default: "none: required", readAt: .beforeRoutes,
            reader: .always { cfg, n, _, r in cfg.routes = ConfigParser.routes(n, cfg, r) }),
        .init(
            "limits", type: "mapping (below)", default: "each key's default",
            reader: .value { cfg, n, _, r in cfg.limits = ConfigParser.limits(n, r) }),
        .init(
            "access_log", type: "bool or mapping (below)", default: "`true` (standard output, unbuffered)",
            reader: .value { cfg, n, _, r in if let a = ConfigParser.accessLog(n, r) { cfg.accessLog = a } }),
        .init(
            "tracing", type: "mapping (below)", default: "none: off, unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set",
            reader: .always { cfg, n, _, r in cfg.tracing = ConfigParser.tracing(n, r) }),
        .init(
            "log_level", type: "`trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`",
            default: "`info`", checkedBy: ConfigDefault.text(GatewayConfig().logLevel)
        ) { cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
            if levels.contains(s) {
                cfg.logLevel = s
            } else {
                r.problem(p, n, "must be one of \(levels.joined(separator: ", "))")
            }
        },
        .init("reserved_header_prefix", type: "header-name prefix", default: "none") { cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s.isEmpty || !s.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }) {
                r.problem(p, n, "must be a header-name prefix such as X-Auth-")
            } else {
                cfg.reservedHeaderPrefix = s
            }
        },
        .init("trusted_proxy_headers", type: "list of header names", default: "`[]`") { cfg, n, p, r in
            guard let list = r.sequence(n, path: p) else { return }
            for (i, item) in list.enumerated() {
                guard let s = r.string(item, path: "\(p)[\(i)]") else { continue }
                if s.isEmpty || !s.utf8.allSatisfy({ HeaderRules.isTokenChar($0) }) {
                    r.problem("\(p)[\(i)]", item, "\"\(s)\" is not a header name")
                } else {
                    cfg.trustedProxyHeaders.append(Array(s.lowercased().utf8))
                }
            }
        },
        .init("token_cache", type: "mapping (below)", default: "`{ entries: 10000, ttl: 120s }`") { cfg, n, p, r in
            guard let m = r.mapping(n, path: p, section: .tokenCache) else { return }
            tokenCacheKeyTable.read(m, into: &cfg, path: p, r)
        },
        .init(
            "public_url", type: "origin, or a list of origins", default: "none",
            reader: .value { cfg, n, _, r in cfg.publicURLs = ConfigParser.publicURLs(n, r) }),
        .init(
            "dpop", type: "mapping (below)", default: "each key's default",
            reader: .value { cfg, n, _, r in cfg.dpop = ConfigParser.dpopSettings(n, r) }),
        // After the modules read with the issuers: its `rate_limit` names their policies.
        .init(
            "login", type: "mapping (below)", default: "each key's default", readAt: .afterIssuers,
            reader: .value { cfg, n, _, r in cfg.login = ConfigParser.login(n, cfg, r) }),
        .init(
            "decision", type: "bool or mapping (below)", default: "off",
            reader: .value { cfg, n, _, r in cfg.decision = ConfigParser.decision(n, r) }),
        .init(
            "pages_dir", type: "path of a directory", default: "none (built-in pages)",
            reader: .value { cfg, n, _, r in cfg.pages = ConfigParser.pages(n, r) }),
        .init(
            "forward_early_hints", type: "`auto`, `always` or `never`", default: "`auto`",
            checkedBy: ConfigDefault.text(GatewayConfig().earlyHints.rawValue)
        ) { cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let mode = EarlyHintsForwarding(rawValue: s) {
                cfg.earlyHints = mode
            } else {
                let modes = EarlyHintsForwarding.allCases.map(\.rawValue).joined(separator: ", ")
                r.problem(p, n, "must be one of \(modes)")
            }
        }
    ])

    /// `issuers:` and `clients:`, read together: a client names its issuer, and an issuer's
    /// `client_id` may be a client's.
    static let issuersAndClients = ConfigKeyGroup<GatewayConfig, ConfigReader> { cfg, top, _, r in
        (cfg.issuers, cfg.clients) = ConfigParser.issuers(top["issuers"], clientsNode: top["clients"], r)
    }

    /// `token_cache:`, the per-worker cache of verified tokens.
    static let tokenCacheKeyTable = ConfigKeyTable<GatewayConfig, ConfigReader>([
        .init(
            "entries", type: "number (`0`: off)", default: "`10000`",
            checkedBy: ConfigDefault.number(GatewayConfig().tokenCacheEntries)
        ) { cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Int(s), v >= 0, v <= 10_000_000 {
                cfg.tokenCacheEntries = v
            } else {
                r.problem(p, n, "must be a number from 0 (off) to 10000000")
            }
        },
        .init(
            "ttl", type: "duration (at least 1s)", default: "`120s`",
            checkedBy: ConfigDefault.duration(GatewayConfig().tokenCacheTTL)
        ) { cfg, n, p, r in
            if let v = r.duration(n, path: p) { cfg.tokenCacheTTL = max(v, 1) }
        }
    ])
}
