import JOSE
import OAuth
import Yams

extension IssuerConfig {
    /// The keys of `issuers.NAME`, each said once: its reference row (type and default,
    /// checked against the model's defaults by ConfigReferenceTests) and its reader. The
    /// issuer URL and its key source (one of `discovery`, `jwks_uri`, `jwks_file`) are read
    /// by ConfigParser.issuers, which builds the issuer from them; `introspection` after the
    /// clients it names, `profile` by ConfigParser.securityProfile; the others here, in this
    /// order.
    static let keyTable = ConfigKeyTable<IssuerConfig, ConfigReader>([
        .init(
            "issuer", type: "http(s) URL: the exact `iss` of its tokens, or a template with one `{tenant}`",
            default: "none: required", by: "ConfigParser.issuers"),
        .init("issuer_aliases", type: "list of strings: other exact `iss` spellings", default: "none") {
            cfg, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            cfg.issuerAliases = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
        },
        .init(
            "tenants", type: "list of tenant ids, or `any`", default: "none (a single-tenant issuer)",
            by: "ConfigParser.issuerTemplate"),
        .init("tenant_claim", type: "claim name", default: "`tid`", checkedBy: ConfigDefault.text(defaults.tenantClaim))
        {
            cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s.isEmpty { r.problem(p, n, "must name a claim") } else { cfg.tenantClaim = s }
        },
        .init(
            "discovery_tenant", type: "one path segment", default: "`organizations`",
            checkedBy: ConfigDefault.text(defaults.discoveryTenant)
        ) { cfg, n, p, r in
            if let s = r.string(n, path: p) { cfg.discoveryTenant = s }
        },
        .init("discovery", type: "bool", default: "`false`", by: "ConfigParser.issuers"),
        .init("jwks_uri", type: "http(s) URL", default: "none", by: "ConfigParser.issuers"),
        .init("jwks_file", type: "path of a JWK Set", default: "none", by: "ConfigParser.issuers"),
        .init(
            "algorithms",
            type: "list of `RS256`, `RS384`, `RS512`, `PS256`, `PS384`, `PS512`, `ES256`, `ES384`, `ES512`, `EdDSA`",
            default: "`[RS256, PS256, ES256, EdDSA]`",
            checkedBy: { cell in
                let names = ConfigDefault.firstValue(cell)?.dropFirst().dropLast().split(separator: ",")
                let algs = names?.map { JWSAlgorithm(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
                return algs.map { !$0.contains(nil) && Set($0.compactMap { $0 }) == defaults.algorithms } ?? false
            }
        ) { cfg, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            var algs = Set<JWSAlgorithm>()
            for (j, a) in seq.enumerated() {
                guard let s = r.string(a, path: "\(p)[\(j)]") else { continue }
                if let alg = JWSAlgorithm(rawValue: s) {
                    algs.insert(alg)
                } else {
                    r.problem(
                        "\(p)[\(j)]", a,
                        "\"\(s)\" is not one of \(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            }
            if algs.contains(where: \.isSymmetric) {
                r.problem(
                    p, n,
                    "HS* algorithms need a shared secret, which an issuer's published keys never are; use RS*/PS*/ES*/EdDSA"
                )
            }
            if !algs.isEmpty { cfg.algorithms = algs }
        },
        // Required: ConfigParser.issuers says so when the table has read none.
        .init("audiences", type: "list of strings", default: "none: required") { cfg, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            cfg.audiences = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
        },
        .init("leeway", type: "duration", default: "`30s`", checkedBy: ConfigDefault.duration(defaults.leeway)) {
            cfg, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v > 300 { r.problem(p, n, "more than 5m of clock skew is not accepted") } else { cfg.leeway = v }
        },
        .init(
            "unknown_kid_wait", type: "duration", default: "`1s`",
            checkedBy: ConfigDefault.duration(defaults.unknownKidWait)
        ) { cfg, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            // Past the JWKS fetch's own 10 s timeout a longer wait would change nothing.
            if v > 10 { r.problem(p, n, "at most 10s (the key fetch's own timeout)") } else { cfg.unknownKidWait = v }
        },
        .init("access_token_type", type: "string: the required `typ`", default: "none") { cfg, n, p, r in
            cfg.accessTokenType = r.string(n, path: p)
        },
        .init(
            "scope_implies", type: "mapping of a scope to the narrower scopes it implies", default: "none"
        ) { cfg, n, p, r in
            guard let m = r.mapping(n, path: p, section: nil) else { return }
            var implies: [String: [String]] = [:]
            for (broad, item) in m {
                guard let list = r.sequence(item, path: "\(p).\(broad)") else { continue }
                implies[broad] = list.enumerated().compactMap { i, s in r.string(s, path: "\(p).\(broad)[\(i)]") }
            }
            do throws(ScopeImplication.Cycle) {
                cfg.scopeImplication = try ScopeImplication(implies: implies)
            } catch {
                r.problem(p, n, "\(error.scope) implies itself (through the others): a hierarchy has no cycle")
            }
        },
        .init(
            "scope_claim", type: "`scope` or `scp`", default: "`scope`",
            checkedBy: ConfigDefault.text(defaults.scopeClaim.rawValue)
        ) { cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let c = ScopeClaim(rawValue: s) {
                cfg.scopeClaim = c
            } else {
                r.problem(p, n, "must be scope (RFC 9068 §2.2.3, the default) or scp")
            }
        },
        .init(
            "provider", type: "`entra`, `okta`, `auth0`, `keycloak`, `google` or `cognito`", default: "none",
            by: "ConfigParser.issuerProvider"),
        .init(
            "role_claims", type: "list of claim paths", default: "the provider's, else `[roles]`",
            checkedBy: { ConfigDefault.firstValue($0) == "[roles]" }
        ) { cfg, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            cfg.roleClaims = seq.enumerated().compactMap { j, item in
                guard let s = r.string(item, path: "\(p)[\(j)]") else { return nil }
                guard let path = ClaimPath(s) else {
                    r.problem("\(p)[\(j)]", item, "is not a claim path (name or a.b.c)")
                    return nil
                }
                return path
            }
        },
        .init(
            "audience_claim", type: "`aud` or `client_id`", default: "`aud` (`client_id` with `provider: cognito`)",
            checkedBy: ConfigDefault.text(defaults.audienceClaim.rawValue)
        ) { cfg, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let c = AudienceClaim(rawValue: s) {
                cfg.audienceClaim = c
            } else {
                r.problem(p, n, "must be aud (RFC 9068 §2.2, the default) or client_id")
            }
        },
        .init(
            "token_use", type: "string: the required `token_use` claim",
            default: "none (`access` with `provider: cognito`)"
        ) { cfg, n, p, r in
            cfg.tokenUse = r.string(n, path: p)
        },
        .init("ca_file", type: "path of PEM CAs for the issuer's HTTPS endpoints", default: "the system's CAs") {
            cfg, n, p, r in
            cfg.caFile = r.string(n, path: p)
        },
        .init("introspection", type: "mapping (below)", default: "none (JWTs only)", by: "ConfigParser.issuers"),
        .init("profile", type: "`fapi2`", default: "none", by: "ConfigParser.securityProfile"),
        .init(
            "claim_sources", type: "list of http(s) URLs: where distributed claims may be fetched (OIDC Core §5.6.2)",
            default: "`[]`: no source is called"
        ) { cfg, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            for (i, item) in seq.enumerated() {
                guard let url = r.string(item, path: "\(p)[\(i)]") else { continue }
                if ConfigValues.url(url) != nil {
                    cfg.claimSources.append(url)
                } else {
                    r.problem("\(p)[\(i)]", item, "\"\(url)\" is not an http(s) URL (no query, fragment or userinfo)")
                }
            }
        }
    ])

    /// An issuer with every default, for the reference's default checks.
    private static var defaults: IssuerConfig { IssuerConfig(name: "", issuer: "", keys: .discovery) }
}

extension IntrospectionConfig {
    /// The keys of `issuers.NAME.introspection`: the client and endpoint are read by
    /// ConfigParser.introspection, which builds the settings from them; the others here.
    static let keyTable = ConfigKeyTable<IntrospectionConfig, ConfigReader>([
        .init("client", type: "a `clients:` name", default: "none: required", by: "ConfigParser.introspection"),
        .init(
            "endpoint", type: "http(s) URL", default: "from discovery (`introspection_endpoint`)",
            by: "ConfigParser.introspection"),
        .init("cache_ttl", type: "duration", default: "`60s`", checkedBy: ConfigDefault.duration(defaults.cacheTTL)) {
            cfg, n, p, r in
            if let v = r.duration(n, path: p) { cfg.cacheTTL = v }
        },
        .init(
            "negative_ttl", type: "duration", default: "`10s`", checkedBy: ConfigDefault.duration(defaults.negativeTTL)
        ) { cfg, n, p, r in
            if let v = r.duration(n, path: p) { cfg.negativeTTL = v }
        },
        // With profile: fapi2, ConfigParser.fapi2Introspection makes it true (and refuses false).
        .init(
            "signed", type: "bool", default: "`false` (`true` with `profile: fapi2`)",
            checkedBy: ConfigDefault.bool(defaults.signed)
        ) { cfg, n, p, r in
            if let b = r.bool(n, path: p) { cfg.signed = b }
        }
    ])

    /// Settings with every default, for the reference's default checks.
    private static var defaults: IntrospectionConfig {
        IntrospectionConfig(
            client: ClientConfig(name: "", issuer: nil, authentication: .tlsClientAuth(clientID: "")), endpoint: nil)
    }
}
