import JOSE
import OAuth
import Yams

/// Multi-tenant issuers: `issuer` with one `{tenant}`, `tenants`, `tenant_claim` and
/// `discovery_tenant` (IssuerTemplate).
extension IssuerConfig {
    /// The template of a multi-tenant issuer; nil for one with an exact `iss`.
    var template: IssuerTemplate? {
        tenants.flatMap { IssuerTemplate(issuer, tenants: $0, tenantClaim: tenantClaim) }
    }

    /// Every template of a multi-tenant issuer: `issuer`'s, then those of `issuer_aliases`
    /// (Entra ID's v1 `https://sts.windows.net/{tenant}/` beside its v2.0 issuer), with the
    /// same tenants. Empty for a single-tenant issuer.
    var templates: [IssuerTemplate] {
        guard let tenants, let template else { return [] }
        return [template]
            + issuerAliases.compactMap { IssuerTemplate($0, tenants: tenants, tenantClaim: tenantClaim) }
    }

    /// Where its discovery document lives: `<issuer>/.well-known/openid-configuration`, with a
    /// template's `{tenant}` as `discovery_tenant` (Entra ID's `/organizations` or `/common`).
    var discoveryBase: String {
        template?.filled(discoveryTenant) ?? issuer
    }

    /// What else than `issuer` its discovery document may name as its issuer (OIDC Discovery
    /// §4.3): for a template, the forms of `IssuerTemplate.discoveryIssuers`.
    var discoveryAlsoNamed: [String] {
        template?.discoveryIssuers(fetchedAs: discoveryTenant) ?? []
    }

    /// Whether `iss` (of an authorization response, RFC 9207, or an ID token before its
    /// claims are read) may be this issuer's: equal, an alias, or fitting the template.
    func mayBe(_ iss: String) -> Bool {
        if template != nil { return templates.contains { $0.fits(iss) } }
        return iss == issuer || issuerAliases.contains(iss)
    }
}

extension ClientAuthentication {
    /// It sends a JWT of its own making (RFC 7523 §2.2), whose `aud` it chooses.
    var signsAssertions: Bool {
        switch self {
        case .privateKeyJWT, .clientSecretJWT: true
        default: false
        }
    }
}

extension IssuerPolicy {
    /// The policy with the issuer's aliases and template.
    func with(issuer: IssuerConfig) -> IssuerPolicy {
        var p = self
        // A multi-tenant issuer's aliases are templates.
        p.aliases = issuer.template == nil ? issuer.issuerAliases : []
        p.templates = issuer.templates
        p.roleClaims = issuer.effectiveRoleClaims
        p.scopeImplication = issuer.scopeImplication
        p.audienceClaim = issuer.audienceClaim
        p.tokenUse = issuer.tokenUse
        return p
    }
}

extension ConfigParser {
    /// `tenants` (a list of ids, or `any`) against the `{tenant}` in `issuer`: both or
    /// neither. An issuer that is no URL once its tenant is filled in is refused.
    static func issuerTemplate(
        _ cfg: inout IssuerConfig, _ d: IssuerDraft, issuer: GivenNode, path p: String, node: Node, _ r: ConfigReader
    ) {
        let placeholders = cfg.issuer.components(separatedBy: IssuerTemplate.placeholder).count - 1
        guard let tenants = d.tenants else {
            for (j, alias) in cfg.issuerAliases.enumerated() where alias.contains(IssuerTemplate.placeholder) {
                r.problem(
                    "\(p).issuer_aliases[\(j)]", d.issuerAliases,
                    "holds {tenant}: only a {tenant} issuer with tenants has template aliases")
            }
            if placeholders > 0 {
                r.problem(
                    "\(p).tenants", node,
                    "is required with {tenant} in issuer: the tenant ids whose tokens are accepted, or any")
            }
            return
        }
        guard placeholders == 1 else {
            r.problem(
                issuer.path, issuer.node,
                placeholders == 0
                    ? "has no {tenant}: tenants apply to a template such as https://login.microsoftonline.com/{tenant}/v2.0"
                    : "may hold {tenant} once")
            return
        }
        let n = tenants.node
        if n.scalar?.string == "any" {
            cfg.tenants = .any
        } else if let seq = r.sequence(n, path: tenants.path) {
            var ids = Set<String>()
            for (j, t) in seq.enumerated() {
                guard let s = r.string(t, path: "\(tenants.path)[\(j)]") else { continue }
                if !IssuerTemplate.isTenantID(s) {
                    r.problem("\(tenants.path)[\(j)]", t, "\"\(s)\" is not a tenant id (one path segment)")
                } else {
                    ids.insert(s)
                }
            }
            if seq.isEmpty { r.problem(tenants.path, n, "is empty: list tenant ids, or any") }
            cfg.tenants = .only(ids)
        }
        for (j, alias) in cfg.issuerAliases.enumerated()
        where alias.components(separatedBy: IssuerTemplate.placeholder).count != 2 {
            r.problem(
                "\(p).issuer_aliases[\(j)]", d.issuerAliases,
                "must hold {tenant} once, as the issuer does (e.g. https://sts.windows.net/{tenant}/)")
        }
        if !IssuerTemplate.isTenantID(cfg.discoveryTenant) {
            r.problem("\(p).discovery_tenant", d.discoveryTenant, "must be one path segment")
        }
    }
}

extension IssuerConfig {
    /// The ID token rules of a login through `clientID` (OIDC Core §3.1.3.7), with the
    /// issuer's aliases and template.
    func idTokenVerifier(clientID: String) -> IDTokenVerifier {
        var v = IDTokenVerifier(issuer: issuer, clientID: clientID, algorithms: algorithms)
        v.aliases = template == nil ? issuerAliases : []
        v.templates = templates
        return v
    }

    /// The logout token rules (OIDC Back-Channel Logout §2.6), likewise.
    func logoutTokenVerifier(clientID: String) -> LogoutTokenVerifier {
        var v = LogoutTokenVerifier(issuer: issuer, clientID: clientID, algorithms: algorithms)
        v.aliases = template == nil ? issuerAliases : []
        v.templates = templates
        return v
    }

    /// The `iss` an authorization response must carry (RFC 9207 §2.4): the issuer; for a
    /// template, the `iss` the response names when it fits with an allowed tenant (the ID
    /// token then proves the tenant with its own claims).
    func expectedResponseIssuer(_ query: Substring) -> String {
        guard template != nil, let pairs = FormEncoding.decode(query),
            let iss = pairs.first(where: { $0.0 == "iss" })?.1,
            templates.contains(where: { $0.allowedTenant(ofIssuer: iss) != nil })
        else { return issuer }
        return iss
    }
}

extension ConfigParser {
    /// What a multi-tenant issuer cannot serve: anything whose audience or issuer check needs
    /// one exact issuer URL before the tenant is known — introspection, client assertions and
    /// request objects with `aud` = the issuer (RFC 7523 §3, RFC 9101 §4), signed responses.
    static func templateIssuerUses(_ cfg: GatewayConfig, top: [String: Node], _ r: ConfigReader) {
        let templates = Set(cfg.issuers.values.filter { $0.template != nil }.map(\.name))
        guard !templates.isEmpty else { return }
        for name in templates.sorted() where cfg.issuers[name]?.introspection != nil {
            let path = "issuers.\(name).introspection"
            r.problem(
                path, ConfigKeyPath.node(at: path, in: top),
                "is not available with a {tenant} issuer: introspection answers name no tenant to check")
        }
        let loginClients = cfg.browserLoginClients
        for (name, client) in cfg.clients.sorted(by: { $0.key < $1.key }) {
            guard let issuer = client.issuer, templates.contains(issuer) else { continue }
            let node = ConfigKeyPath.node(at: "clients.\(name)", in: top)
            if client.authentication.signsAssertions, client.assertionAudience == .issuer {
                r.problem(
                    "clients.\(name).assertion_audience", node,
                    "must be endpoint: the issuer \(issuer) is a {tenant} template, no audience (RFC 7523 §3)")
            }
            guard loginClients.contains(name) else { continue }
            if client.login.requestMode != .plain {
                r.problem(
                    "clients.\(name).request_mode", node,
                    "must be plain: a request object's aud is the issuer (RFC 9101 §4), and \(issuer) is a {tenant} template"
                )
            }
            if client.login.responseMode.isJWT {
                r.problem(
                    "clients.\(name).response_mode", node,
                    "must be query: a signed response's iss is checked before the tenant is known")
            }
        }
    }

    /// `tenants: any` accepts every tenant of the provider: anyone who can create one.
    static func templateWarnings(_ cfg: GatewayConfig) -> [ConfigProblem] {
        cfg.issuers.values.sorted { $0.name < $1.name }.compactMap { issuer in
            guard issuer.tenants == .any else { return nil }
            return ConfigProblem(
                path: "issuers.\(issuer.name).tenants", line: nil,
                message:
                    "any accepts tokens of every tenant of \(issuer.issuer), and anyone can create a tenant; list the tenant ids, "
                    + "or scope each route with require rules the tenants cannot forge for themselves (require.claims on tid)"
            )
        }
    }
}
