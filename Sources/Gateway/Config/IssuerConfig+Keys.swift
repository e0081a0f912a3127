import JOSE
import OAuth
import Yams

extension IssuerConfig {
    /// The keys of `issuers.NAME`, each said once: its reference row (type and default,
    /// checked against the model's defaults by ConfigReferenceTests) and its row, read in this
    /// order into an `IssuerDraft`. `issuer` and `provider` come first: a provider's presets
    /// read the issuer URL, and the keys after them override the presets. The key source (one
    /// of `discovery`, `jwks_uri`, `jwks_file`), `tenants` and `introspection` are kept as
    /// given, for ConfigParser.issuers to combine (`introspection` after the clients it names).
    static let keyTable = ConfigKeyTable<IssuerDraft, ConfigReader>([
        .init(
            "issuer", type: "http(s) URL: the exact `iss` of its tokens, or a template with one `{tenant}`",
            default: "none: required"
        ) { d, n, p, r in
            guard let iss = r.string(n, path: p) else { return }
            d.issuer = GivenNode(node: n, path: p)
            d.cfg.issuer = iss
            // A template is checked as the URL it becomes with a tenant filled in.
            let filled = iss.replacingOccurrences(of: IssuerTemplate.placeholder, with: "tenant")
            if ConfigValues.url(filled.hasSuffix("/") ? String(filled.dropLast()) : filled) == nil {
                r.problem(p, n, "\"\(iss)\" is not an http(s) URL")
            }
        },
        .init(
            "provider", type: "`entra`, `okta`, `auth0`, `keycloak`, `google` or `cognito`", default: "none"
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            guard let provider = IdentityProvider(rawValue: s) else {
                r.problem(
                    p, n, "\"\(s)\" is not one of \(IdentityProvider.allCases.map(\.rawValue).joined(separator: ", "))")
                return
            }
            d.cfg.provider = provider
            provider.applyDefaults(to: &d.cfg)
        },
        .init("issuer_aliases", type: "list of strings: other exact `iss` spellings", default: "none") {
            d, n, p, r in
            d.issuerAliases = n
            guard let seq = r.sequence(n, path: p) else { return }
            d.cfg.issuerAliases = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
        },
        .init("tenants", type: "list of tenant ids, or `any`", default: "none (a single-tenant issuer)") {
            d, n, p, _ in d.tenants = GivenNode(node: n, path: p)
        },
        .init("tenant_claim", type: "claim name", default: "`tid`", checkedBy: ConfigDefault.text(defaults.tenantClaim))
        {
            d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s.isEmpty { r.problem(p, n, "must name a claim") } else { d.cfg.tenantClaim = s }
        },
        .init(
            "discovery_tenant", type: "one path segment", default: "`organizations`",
            checkedBy: ConfigDefault.text(defaults.discoveryTenant)
        ) { d, n, p, r in
            d.discoveryTenant = n
            if let s = r.string(n, path: p) { d.cfg.discoveryTenant = s }
        },
        .init("discovery", type: "bool", default: "`false`") { d, n, p, r in
            if let b = r.bool(n, path: p) { d.discovery = b }
        },
        .init("jwks_uri", type: "http(s) URL", default: "none") { d, n, p, r in
            guard let u = r.string(n, path: p) else { return }
            if ConfigValues.url(u) == nil && !(u.contains("?")) { r.problem(p, n, "\"\(u)\" is not an http(s) URL") }
            d.jwksURI = u
        },
        .init("jwks_file", type: "path of a JWK Set", default: "none") { d, n, p, r in
            guard let f = r.string(n, path: p) else { return }
            d.jwksFile = f.hasPrefix("/") ? f : "\(r.baseDirectory)/\(f)"
        },
        .init(
            "algorithms",
            type: "list of `RS256`, `RS384`, `RS512`, `PS256`, `PS384`, `PS512`, `ES256`, `ES384`, `ES512`, `EdDSA`",
            default: "`[RS256, PS256, ES256, EdDSA]`",
            checkedBy: { cell in
                let names = ConfigDefault.firstValue(cell)?.dropFirst().dropLast().split(separator: ",")
                let algs = names?.map { JWSAlgorithm(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
                return algs.map { !$0.contains(nil) && Set($0.compactMap { $0 }) == defaults.algorithms } ?? false
            }
        ) { d, n, p, r in
            d.algorithms = n
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
            if !algs.isEmpty { d.cfg.algorithms = algs }
        },
        // Required: ConfigParser.issuers says so when the table has read none.
        .init("audiences", type: "list of strings", default: "none: required") { d, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            d.cfg.audiences = seq.enumerated().compactMap { r.string($1, path: "\(p)[\($0)]") }
        },
        .init("leeway", type: "duration", default: "`30s`", checkedBy: ConfigDefault.duration(defaults.leeway)) {
            d, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v > 300 { r.problem(p, n, "more than 5m of clock skew is not accepted") } else { d.cfg.leeway = v }
        },
        .init(
            "unknown_kid_wait", type: "duration", default: "`1s`",
            checkedBy: ConfigDefault.duration(defaults.unknownKidWait)
        ) { d, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            // Past the JWKS fetch's own 10 s timeout a longer wait would change nothing.
            if v > 10 { r.problem(p, n, "at most 10s (the key fetch's own timeout)") } else { d.cfg.unknownKidWait = v }
        },
        .init("access_token_type", type: "string: the required `typ`", default: "none") { d, n, p, r in
            d.cfg.accessTokenType = r.string(n, path: p)
        },
        .init(
            "scope_implies", type: "mapping of a scope to the narrower scopes it implies", default: "none"
        ) { d, n, p, r in
            guard let m = r.mapping(n, path: p, section: nil) else { return }
            var implies: [String: [String]] = [:]
            for (broad, item) in m {
                guard let list = r.sequence(item, path: "\(p).\(broad)") else { continue }
                implies[broad] = list.enumerated().compactMap { i, s in r.string(s, path: "\(p).\(broad)[\(i)]") }
            }
            do throws(ScopeImplication.Cycle) {
                d.cfg.scopeImplication = try ScopeImplication(implies: implies)
            } catch {
                r.problem(p, n, "\(error.scope) implies itself (through the others): a hierarchy has no cycle")
            }
        },
        .init(
            "scope_claim", type: "`scope` or `scp`", default: "`scope`",
            checkedBy: ConfigDefault.text(defaults.scopeClaim.rawValue)
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let c = ScopeClaim(rawValue: s) {
                d.cfg.scopeClaim = c
            } else {
                r.problem(p, n, "must be scope (RFC 9068 §2.2.3, the default) or scp")
            }
        },
        .init(
            "role_claims", type: "list of claim paths", default: "the provider's, else `[roles]`",
            checkedBy: { ConfigDefault.firstValue($0) == "[roles]" }
        ) { d, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            d.cfg.roleClaims = seq.enumerated().compactMap { j, item in
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
        ) { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let c = AudienceClaim(rawValue: s) {
                d.cfg.audienceClaim = c
            } else {
                r.problem(p, n, "must be aud (RFC 9068 §2.2, the default) or client_id")
            }
        },
        .init(
            "token_use", type: "string: the required `token_use` claim",
            default: "none (`access` with `provider: cognito`)"
        ) { d, n, p, r in
            d.cfg.tokenUse = r.string(n, path: p)
        },
        .init("ca_file", type: "path of PEM CAs for the issuer's HTTPS endpoints", default: "the system's CAs") {
            d, n, p, r in
            d.cfg.caFile = r.string(n, path: p)
        },
        .init("introspection", type: "mapping (below)", default: "none (JWTs only)") { d, n, p, _ in
            d.introspection = GivenNode(node: n, path: p)
        },
        .init("profile", type: "`fapi2`", default: "none") { d, n, p, r in
            d.cfg.profile = ConfigParser.securityProfile(n, path: p, r)
        },
        .init(
            "claim_sources", type: "list of http(s) URLs: where distributed claims may be fetched (OIDC Core §5.6.2)",
            default: "`[]`: no source is called"
        ) { d, n, p, r in
            guard let seq = r.sequence(n, path: p) else { return }
            for (i, item) in seq.enumerated() {
                guard let url = r.string(item, path: "\(p)[\(i)]") else { continue }
                if ConfigValues.url(url) != nil {
                    d.cfg.claimSources.append(url)
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
    /// The keys of `issuers.NAME.introspection`, read in this order into an
    /// `IntrospectionDraft`: the client and endpoint as given (ConfigParser.introspection holds
    /// them to the clients and the issuer's discovery), the others into the settings.
    static let keyTable = ConfigKeyTable<IntrospectionDraft, ConfigReader>([
        .init("client", type: "a `clients:` name", default: "none: required") { d, n, p, r in
            if let s = r.string(n, path: p) { d.client = GivenKey(value: s, node: n) }
        },
        .init("endpoint", type: "http(s) URL", default: "from discovery (`introspection_endpoint`)") { d, n, p, r in
            guard let endpoint = r.string(n, path: p) else { return }
            if ConfigValues.url(endpoint) == nil { r.problem(p, n, "\"\(endpoint)\" is not an http(s) URL") }
            d.cfg.endpoint = endpoint
        },
        .init("cache_ttl", type: "duration", default: "`60s`", checkedBy: ConfigDefault.duration(defaults.cacheTTL)) {
            d, n, p, r in
            if let v = r.duration(n, path: p) { d.cfg.cacheTTL = v }
        },
        .init(
            "negative_ttl", type: "duration", default: "`10s`", checkedBy: ConfigDefault.duration(defaults.negativeTTL)
        ) { d, n, p, r in
            if let v = r.duration(n, path: p) { d.cfg.negativeTTL = v }
        },
        // With profile: fapi2, ConfigParser.fapi2Introspection makes it true (and refuses false).
        .init(
            "signed", type: "bool", default: "`false` (`true` with `profile: fapi2`)",
            checkedBy: ConfigDefault.bool(defaults.signed)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.cfg.signed = b }
        }
    ])

    /// Settings with every default (and no client yet): the reference's default checks, a
    /// draft's start.
    static var defaults: IntrospectionConfig {
        IntrospectionConfig(
            client: ClientConfig(name: "", issuer: nil, authentication: .tlsClientAuth(clientID: "")), endpoint: nil)
    }
}

/// An issuer's `introspection:` as its table reads it: the settings, and the client's name as
/// given (its `ClientConfig` is put in once it is found among the clients).
struct IntrospectionDraft {
    var cfg = IntrospectionConfig.defaults
    var client: GivenKey<String>?
}

/// An `issuers.NAME` entry as its table reads it: the issuer its plain keys are read into, and
/// what ConfigParser.issuers combines once they are read (the key source, the template, the
/// profile's rules, introspection).
struct IssuerDraft {
    var cfg: IssuerConfig
    var issuer: GivenNode?
    var discovery = false
    var jwksURI: String?
    /// `jwks_file`, made absolute against the config's directory.
    var jwksFile: String?
    var tenants: GivenNode?
    // Kept for the checks that point at them (ConfigParser.issuerTemplate, fapi2Issuer).
    var issuerAliases: Node?
    var discoveryTenant: Node?
    var algorithms: Node?
    /// Read after the clients it names.
    var introspection: GivenNode?

    init(name: String) {
        cfg = IssuerConfig(name: name, issuer: "", keys: .discovery)
    }

    /// Where the issuer's keys come from: exactly one of `discovery`, `jwks_uri`, `jwks_file`
    /// (nil otherwise: ConfigValidation.issuerKeySource says so).
    var keySource: IssuerConfig.KeySource? {
        switch (discovery, jwksURI, jwksFile) {
        case (true, nil, nil): .discovery
        case (false, let u?, nil): .jwksURI(u)
        case (false, nil, let f?): .jwksFile(f)
        default: nil
        }
    }
}
