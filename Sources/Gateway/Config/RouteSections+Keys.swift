import OAuth
import Reactor
import Yams

/// A route's `match:` as its table reads it: the host and methods into the match, and the
/// path rules as given, for ConfigParser.routeMatch to hold to exactly one.
struct RouteMatchDraft {
    var match = RouteMatch(host: nil, path: .prefix("/"), methods: nil)
    var paths: [(kind: PathKind, key: GivenNode)] = []

    enum PathKind { case exact, prefix, template }
}

extension RouteMatch {
    /// The keys of a route's `match:`, each said once with its reference row and read here in
    /// this order. Exactly one of `path`, `path_prefix`, `path_template` is right:
    /// ConfigValidation.routeMatch says so, ConfigParser.routeMatch reads the one given.
    static let keyTable = ConfigKeyTable<RouteMatchDraft, ConfigReader>([
        .init("host", type: "host name or `*.suffix`", default: "any host") { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            d.match.host = HostPattern(s)
            if d.match.host == nil { r.problem(p, n, "\"\(s)\" is not a host name or *.wildcard") }
        },
        .init("path", type: "normalized path (exact)", default: "none") { d, n, p, _ in
            d.paths.append((.exact, GivenNode(node: n, path: p)))
        },
        .init("path_prefix", type: "normalized path (whole segments)", default: "none") { d, n, p, _ in
            d.paths.append((.prefix, GivenNode(node: n, path: p)))
        },
        .init("path_template", type: "path template: `{name}` segments, `{name*}` last", default: "none") {
            d, n, p, _ in d.paths.append((.template, GivenNode(node: n, path: p)))
        },
        .init("methods", type: "list of HTTP methods", default: "any method") { d, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            var set = Set<HTTPMethod>()
            for (j, item) in seq.enumerated() {
                guard let s = r.string(item, path: "\(p)[\(j)]") else { continue }
                if let method = HTTPMethod(rawValue: s.uppercased()) {
                    set.insert(method)
                } else {
                    r.problem(
                        "\(p)[\(j)]", item,
                        "\"\(s)\" is not one of \(HTTPMethod.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            }
            d.match.methods = set
        }
    ])
}

extension AuthorizationRequirement {
    /// The keys of a `require:` mapping (a route's, an `any_of` alternative's, an MCP
    /// entry's), each read here in this order. `issuers` and `clients` name the route's own,
    /// which ConfigParser.checkVouchers holds them to once the route is read.
    static let keyTable = ConfigKeyTable<AuthorizationRequirement, ConfigReader>([
        .init("scopes", type: "list", default: "none") { req, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            req.scopes = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
        },
        .init("roles", type: "list", default: "none") { req, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            req.roles = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
            if seq.isEmpty { r.problem(p, n, "is empty: list roles, or remove the key") }
        },
        .init("claims", type: "mapping of claim path to a value or a rule (below)", default: "none") { req, n, p, r in
            ConfigParser.claimRules(n, path: p, &req, r)
        },
        .init("email_domains", type: "list of domain names", default: "none") { req, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            for (j, item) in seq.enumerated() {
                guard let s = r.string(item, path: "\(p)[\(j)]") else { continue }
                let d = s.lowercased()
                if d.hasPrefix(".") || d.hasPrefix("@") || d.hasPrefix("*") {
                    r.problem("\(p)[\(j)]", item, "write the bare domain (example.com); its subdomains match too")
                } else if HostNormalizer.normalize(d) == nil || d.contains(":") || !d.contains(".") {
                    r.problem("\(p)[\(j)]", item, "\"\(s)\" is not a domain name such as example.com")
                } else {
                    req.emailDomains.append(d)
                }
            }
            if seq.isEmpty { r.problem(p, n, "is empty: no email would match; list domains or remove the key") }
        },
        .init("any_of", type: "list of at least two `require` mappings", default: "none") { req, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            if seq.count < 2 {
                r.problem(p, n, "needs at least two alternatives (with one, write its rules directly)")
            }
            req.anyOf = seq.enumerated().map { j, item in
                let alt = ConfigParser.requirement(item, path: "\(p)[\(j)]", r)
                if alt.hasStepUp {
                    r.problem(
                        "\(p)[\(j)]", item,
                        "acr and max_age apply to the whole route: put them in the route's require, not in any_of")
                }
                // An alternative with no rule is always met, and so would the whole any_of be
                // (`any_of: [{}, {scopes: [admin]}]` lets everyone in).
                if alt.isEmpty {
                    r.problem(
                        "\(p)[\(j)]", item,
                        "has no rules, so it is always met and any_of lets everyone in; give it scopes, claims or email_domains, or remove it"
                    )
                }
                return alt
            }
        },
        .init("issuers", type: "list of the route's issuer names", default: "none") { req, n, p, r in
            req.issuers = names(n, p, r)
        },
        .init("clients", type: "list of the route's login clients", default: "none") { req, n, p, r in
            req.clients = names(n, p, r)
        },
        .init("acr", type: "list of `acr` values (RFC 9470)", default: "none") { req, n, p, r in
            req.acr = names(n, p, r)
        },
        .init("max_age", type: "duration, whole seconds (RFC 9470)", default: "none") { req, n, p, r in
            guard let d = r.duration(n, path: p) else { return }
            guard d >= 1, d == d.rounded(.down) else {
                r.problem(p, n, "must be a whole number of seconds, at least 1s")
                return
            }
            req.maxAge = Int(d)
        }
    ])

    /// The rule of one claim (`require.claims.CLAIM`): exactly one of these (ConfigParser.claimRules
    /// reads a mapping of one key only), each read here.
    static let claimRuleKeyTable = ConfigKeyTable<[Rule], ConfigReader>([
        .init("equals", type: "string", default: "none") { rules, n, p, r in
            if let s = r.string(n, path: p) { rules.append(.equals(s)) }
        },
        .init("one_of", type: "list", default: "none") { rules, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            rules.append(.oneOf(seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }))
        },
        .init("contains", type: "string", default: "none") { rules, n, p, r in
            if let s = r.string(n, path: p) { rules.append(.contains(s)) }
        }
    ])

    /// A list of names, the problem when it names none.
    private static func names(_ n: Node, _ p: String, _ r: ConfigReader) -> [String] {
        guard let seq = r.sequence(n, path: p) else { return [] }
        let names = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
        if names.isEmpty { r.problem(p, n, "is empty: no caller would match; list names or remove the key") }
        return names
    }
}

extension IdentityAssertionConfig {
    /// The keys of a route's `identity_assertion:`, each read here in this order once
    /// ConfigValidation.identityAssertion has found what the assertion needs.
    static let keyTable = ConfigKeyTable<IdentityAssertionConfig, ConfigReader>([
        .init(
            "header", type: "header name", default: "`X-Tokengate-Assertion`",
            checkedBy: ConfigDefault.text(IdentityAssertionConfig.defaultHeader)
        ) { a, n, p, r in
            guard let h = r.string(n, path: p) else { return }
            if ConfigParser.headerName(h, path: p, n, allowAuthorization: false, r) { a.header = h }
        },
        .init(
            "lifetime", type: "duration", default: "`60s`",
            checkedBy: ConfigDefault.duration(IdentityAssertionConfig(audience: "", issuer: "").lifetime)
        ) { a, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 10 || v > 3600 {
                r.problem(
                    p, n, "must be from 10s to 1h (short: a leaked assertion is soon useless; 60s is the default)")
            } else {
                a.lifetime = v
            }
        },
        .init("audience", type: "string", default: "the route's upstream URL (`http://host:port/path`)") { a, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s.isEmpty {
                r.problem(p, n, "must not be empty (the upstream checks it; default: the upstream URL)")
            } else {
                a.audience = s
            }
        }
    ])
}

extension MCPRules {
    /// The keys of a route's `mcp:`, each read here in this order.
    static let keyTable = ConfigKeyTable<MCPRules, ConfigReader>([
        .init(
            "default", type: "`allow` or `deny`", default: "`allow`",
            checkedBy: { cell in ConfigDefault.firstValue(cell) == "allow" && MCPRules().allowsUnlisted }
        ) { rules, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            switch s {
            case "allow": rules.allowsUnlisted = true
            case "deny": rules.allowsUnlisted = false
            default: r.problem(p, n, "must be allow or deny")
            }
        },
        .init(
            "max_request_bytes", type: "size", default: "`1MB`",
            checkedBy: ConfigDefault.size(MCPRules().maxRequestBytes)
        ) { rules, n, p, r in
            guard let v = r.size(n, path: p) else { return }
            if v < 1 || v > ConfigParser.mcpMaxRequestBytesCeiling {
                r.problem(p, n, "must be between 1 B and 16MB")
            } else {
                rules.maxRequestBytes = v
            }
        },
        .init(
            "max_response_bytes", type: "size", default: "`4MB`",
            checkedBy: ConfigDefault.size(MCPRules().maxResponseBytes)
        ) { rules, n, p, r in
            guard let v = r.size(n, path: p) else { return }
            if v < 1 || v > ConfigParser.mcpMaxResponseBytesCeiling {
                r.problem(p, n, "must be between 1 B and 64MB")
            } else {
                rules.maxResponseBytes = v
            }
        },
        .init(
            "protocol_versions", type: "list of MCP revisions", default: "`[2025-06-18, 2025-11-25, 2026-07-28]`"
        ) { rules, n, p, r in
            guard let list = r.sequence(n, path: p) else { return }
            var versions: [String] = []
            for (i, item) in list.enumerated() {
                guard let v = r.string(item, path: "\(p)[\(i)]") else { continue }
                if MCPProtocolVersion.known.contains(v) {
                    if !versions.contains(v) { versions.append(v) }
                } else {
                    r.problem(
                        "\(p)[\(i)]", item,
                        "\(v) is not an MCP revision tokengate speaks: \(MCPProtocolVersion.known.joined(separator: ", "))"
                    )
                }
            }
            if list.isEmpty { r.problem(p, n, "must name at least one revision") }
            if !versions.isEmpty { rules.protocolVersions = versions }
        },
        .init(
            "listen_timeout", type: "duration", default: "`1h`",
            checkedBy: ConfigDefault.duration(MCPRules().listenTimeout)
        ) { rules, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 1 || v > 86400 {
                r.problem(p, n, "must be between 1s and 24h")
            } else {
                rules.listenTimeout = v
            }
        },
        .init("allowed_origins", type: "list of origins (`https://host[:port]`)", default: "none: the route's own") {
            rules, n, p, r in
            guard let list = r.sequence(n, path: p) else { return }
            for (i, item) in list.enumerated() {
                guard let o = r.string(item, path: "\(p)[\(i)]") else { continue }
                if MCPOrigin.isOrigin(o) {
                    rules.allowedOrigins.append(o.lowercased())
                } else {
                    r.problem("\(p)[\(i)]", item, "\(o) is not an origin: write http(s)://host[:port], nothing after")
                }
            }
        },
        .init("methods", type: "mapping of method name to an entry", default: "none") { rules, n, p, r in
            rules.methods = ConfigParser.mcpTable(n, path: p, r)
        },
        .init("tools", type: "mapping of tool name to an entry", default: "none") { rules, n, p, r in
            rules.tools = ConfigParser.mcpTable(n, path: p, r)
        },
        .init("resources", type: "mapping of resource URI to an entry", default: "none") { rules, n, p, r in
            rules.resources = ConfigParser.mcpTable(n, path: p, resources: true, r)
        },
        .init("prompts", type: "mapping of prompt name to an entry", default: "none") { rules, n, p, r in
            rules.prompts = ConfigParser.mcpTable(n, path: p, r)
        }
    ])

    /// The keys of an entry of `methods`, `tools`, `resources` or `prompts`, read here for
    /// ConfigParser.mcpTable (nil: the entry gave no requirement, which it reports).
    static let entryKeyTable = ConfigKeyTable<AuthorizationRequirement?, ConfigReader>([
        .init("require", type: "a `routes[].require` mapping", default: "none: required") { entry, n, p, r in
            let requirement = ConfigParser.requirement(n, path: p, r)
            if requirement.hasStepUp {
                r.problem(p, n, "acr and max_age apply to the whole route: put them in the route's require")
            }
            entry = requirement
        }
    ])
}
