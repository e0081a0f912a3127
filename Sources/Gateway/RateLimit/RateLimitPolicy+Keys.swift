import Yams

/// `rate` and `burst`, of a policy or an override, as read by their rows: the rate is
/// required, and burst's default comes from it (`RateLimitRuleKeys.rule`).
struct RateLimitRuleKeys {
    /// `rate:` (nil inside: refused, a problem says why).
    var rate: GivenKey<RateLimitRate>?
    /// `burst:` (nil inside: refused).
    var burst: GivenKey<Int>?

    /// The rule, or nil with a problem when the rate is missing or a value was refused.
    func rule(path p: String, _ r: ConfigReader) -> RateLimitRule? {
        guard let rate else {
            r.problem("\(p).rate", nil, "is required: N/s, N/m, N/h or N/d")
            return nil
        }
        guard let value = rate.value else { return nil }
        guard let burst else { return RateLimitRule(rate: value, burst: RateLimitRule.defaultBurst(value)) }
        return burst.value.map { RateLimitRule(rate: value, burst: $0) }
    }

    /// `rate:` (`N/s`, `N/m`, `N/h` or `N/d`), of a policy or an override.
    static func readRate(_ k: inout RateLimitRuleKeys, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let s = r.string(n, path: p) else {
            k.rate = GivenKey(value: nil, node: n)
            return
        }
        let rate = RateLimitRate(s)
        if rate == nil { r.problem(p, n, "\"\(s)\" is not N/s, N/m, N/h or N/d (N from 1)") }
        k.rate = GivenKey(value: rate, node: n)
    }

    /// `burst:`, from 1 to 1,000,000.
    static func readBurst(_ k: inout RateLimitRuleKeys, _ n: Node, _ p: String, _ r: ConfigReader) {
        guard let t = r.string(n, path: p) else { return }
        guard let v = Int(t), v >= 1, v <= 1_000_000 else {
            r.problem(p, n, "must be a number from 1 to 1000000")
            k.burst = GivenKey(value: nil, node: n)
            return
        }
        k.burst = GivenKey(value: v, node: n)
    }
}

/// A `rate_limits.NAME` entry as its keys say it: its plain keys, its rule's keys, and its
/// overrides' (ConfigParser.rateLimits makes the policy and the rules).
struct RateLimitPolicyKeys {
    var key = RateLimitKey.subject
    var onStoreFailure = RateLimitStoreFailure.failOpen
    var headers = true
    var rule = RateLimitRuleKeys()
    /// `overrides:`, by key value, in the file's order.
    var overrides: [(value: String, path: String, rule: RateLimitRuleKeys)] = []
}

extension RateLimitPolicy {
    /// The keys of a `rate_limits.NAME` entry, each said once: its reference row (checked by
    /// ConfigReferenceTests) and its reader.
    static let keyTable = ConfigKeyTable<RateLimitPolicyKeys, ConfigReader>([
        .init(
            "key", type: "`sub`, `client_id`, `jkt`, `cert`, `ip`, `claim:PATH`, `header:NAME` or `tool`",
            default: "`sub`", checkedBy: ConfigDefault.text(RateLimitKey.subject.text)
        ) { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let key = RateLimitKey(s) {
                x.key = key
            } else {
                r.problem(p, n, "\"\(s)\" is not sub, client_id, jkt, cert, ip, claim:PATH, header:NAME or tool")
            }
        },
        .init("rate", type: "`N/s`, `N/m`, `N/h` or `N/d`", default: "none: required") { x, n, p, r in
            RateLimitRuleKeys.readRate(&x.rule, n, p, r)
        },
        .init("burst", type: "number (at least 1)", default: "the per-second rate, at least 1") { x, n, p, r in
            RateLimitRuleKeys.readBurst(&x.rule, n, p, r)
        },
        .init("overrides", type: "mapping: a key value to `{ rate, burst }`", default: "none") { x, n, p, r in
            guard let overrides = r.mapping(n, path: p, section: nil) else { return }
            for (value, item) in overrides {
                let q = "\(p).\(value)"
                guard let f = r.mapping(item, path: q, section: .rateLimitOverride) else { continue }
                var rule = RateLimitRuleKeys()
                overrideKeyTable.read(f, into: &rule, path: q, r)
                x.overrides.append((value, q, rule))
            }
        },
        .init(
            "on_store_failure", type: "`fail_open` or `fail_closed`", default: "`fail_open`",
            checkedBy: ConfigDefault.text(RateLimitStoreFailure.failOpen.rawValue)
        ) { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = RateLimitStoreFailure(rawValue: s) {
                x.onStoreFailure = v
            } else {
                r.problem(p, n, "must be fail_open or fail_closed")
            }
        },
        .init("headers", type: "bool", default: "`true`", checkedBy: ConfigDefault.bool(true)) { x, n, p, r in
            if let v = r.bool(n, path: p) { x.headers = v }
        }
    ])

    /// The keys of an override (`rate_limits.NAME.overrides.VALUE`).
    static let overrideKeyTable = ConfigKeyTable<RateLimitRuleKeys, ConfigReader>([
        .init(
            "rate", type: "`N/s`, `N/m`, `N/h` or `N/d`", default: "none: required", read: RateLimitRuleKeys.readRate),
        .init(
            "burst", type: "number (at least 1)", default: "the per-second rate, at least 1",
            read: RateLimitRuleKeys.readBurst)
    ])
}

extension ConfigParser {
    /// `rate_limits:`: named policies, by name.
    static func rateLimits(_ node: Node?, _ r: ConfigReader) -> [String: RateLimitPolicy] {
        guard let node, let m = r.mapping(node, path: "rate_limits", section: nil) else { return [:] }
        var policies: [String: RateLimitPolicy] = [:]
        for (name, entry) in m {
            let p = "rate_limits.\(name)"
            // The name goes out in RateLimit fields as a Structured Field string.
            guard !name.isEmpty, name.utf8.count <= 64,
                name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c })
            else {
                r.problem(p, entry, "a policy name must be 1-64 printable characters, without quotes or backslashes")
                continue
            }
            guard let fields = r.mapping(entry, path: p, section: .rateLimit) else { continue }
            // Every key is read, and its problems reported, even when the rate is wrong; the
            // policy's fields are serialized from its rule when it is made.
            var keys = RateLimitPolicyKeys()
            RateLimitPolicy.keyTable.read(fields, into: &keys, path: p, r)
            guard let limit = keys.rule.rule(path: p, r) else { continue }
            var policy = RateLimitPolicy(name: name, limit: limit)
            (policy.key, policy.onStoreFailure, policy.headers) = (keys.key, keys.onStoreFailure, keys.headers)
            for o in keys.overrides {
                if let rule = o.rule.rule(path: o.path, r) { policy.overrides[o.value] = rule }
            }
            policies[name] = policy
        }
        return policies
    }

    /// A route's `rate_limit`: one policy name or a list, each defined under `rate_limits`.
    static func routeRateLimits(_ route: inout RouteConfig, _ node: Node, path p: String, _ context: RouteKeyContext) {
        let policies = rateLimitPolicies(node, path: p, defined: context.cfg.rateLimits, context.r)
        if !policies.isEmpty { route.options.settings[RateLimitStage.Settings.self] = policies }
    }

    /// A `rate_limit` value: one policy name or a list, each defined under `rate_limits` (a
    /// name listed twice counts once).
    static func rateLimitPolicies(
        _ node: Node, path p: String, defined: [String: RateLimitPolicy], _ r: ConfigReader
    ) -> [RateLimitPolicy] {
        let names: [(String, Node)]
        if case .scalar = node {
            guard let s = r.string(node, path: p) else { return [] }
            names = [(s, node)]
        } else {
            guard let list = r.sequence(node, path: p) else { return [] }
            names = list.enumerated().compactMap { i, item in r.string(item, path: "\(p)[\(i)]").map { ($0, item) } }
        }
        var policies: [RateLimitPolicy] = []
        for (name, item) in names {
            guard let policy = defined[name] else {
                let names = defined.keys.sorted().joined(separator: ", ")
                r.problem(p, item, "\"\(name)\" is not defined under rate_limits; defined: \(names)")
                continue
            }
            if !policies.contains(where: { $0.name == name }) { policies.append(policy) }
        }
        return policies
    }

    /// What rate limits need of the rest of the config: `tool` only on MCP routes, and with
    /// Redis a digest key every replica shares (`session.keys`).
    static func checkRateLimits(_ cfg: GatewayConfig, top: [String: Node], _ r: ConfigReader) {
        checkHeaderKeys(cfg, top: top, r)
        var limited = !cfg.login.rateLimits.isEmpty
        for route in cfg.routes {
            guard let policies = route.options.settings[RateLimitStage.Settings.self]
            else { continue }
            limited = true
            let path = "routes[\(route.index)].\(RateLimitStage.routeKey.name)"
            for policy in policies where policy.key == .tool && route.options.auth.tokenRoute?.mcp == nil {
                r.problem(
                    path, ConfigKeyPath.node(at: path, in: top),
                    "\"\(policy.name)\" counts by tool, and this route is not an MCP route")
            }
        }
        if limited, case .redis = cfg.store, cfg.session.keys.isEmpty {
            r.problem(
                "rate_limits", nil,
                "with a Redis store, rate limits need session.keys: every replica must name a caller's key the same way"
            )
        }
    }

    /// A `header:` key counts what the client says, so it may name only a header the client
    /// cannot be stopped from varying anyway: not one tokengate rewrites (X-Forwarded-For,
    /// Forwarded, X-Request-Id), strips (identity headers, the reserved prefix) or takes only
    /// from a trusted proxy (X-Real-IP and the other override headers): every client would
    /// escape the limit by changing it. `key: ip` reads the address as `trusted_proxies` allow.
    static func checkHeaderKeys(_ cfg: GatewayConfig, top: [String: Node], _ r: ConfigReader) {
        let stripped = RuntimeConfig(cfg).strippedIdentityHeaders
        for (name, policy) in cfg.rateLimits.sorted(by: { $0.key < $1.key }) {
            guard case .header(let header) = policy.key,
                !HeaderRules.forwardsRequestHeader(
                    header, listed: stripped, reservedPrefix: cfg.reservedHeaderPrefix,
                    trustedOnlyExtra: cfg.trustedProxyHeaders)
            else { continue }
            let path = "rate_limits.\(name).key"
            r.problem(
                path, ConfigKeyPath.node(at: path, in: top),
                "\(header) is a header tokengate rewrites, strips or takes only from a trusted proxy: a client sets "
                    + "it to anything and escapes the limit; count by key: ip (which reads X-Forwarded-For from "
                    + "trusted_proxies only)")
        }
    }
}
