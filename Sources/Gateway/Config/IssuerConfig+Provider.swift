import JOSE
import OAuth
import Yams

/// `provider:` presets: what each identity provider's tokens look like, as defaults of an
/// issuer's keys. A preset sets nothing a key of the issuer sets itself; `check-config`
/// prints what it set (`presetNotes`).
enum IdentityProvider: String, Sendable, CaseIterable {
    case entra, okta, auth0, keycloak, google, cognito

    /// The defaults this provider's tokens need, applied before the issuer's own keys are read
    /// (so each key overrides them). `issuer`: the configured issuer URL.
    func applyDefaults(to cfg: inout IssuerConfig) {
        switch self {
        case .entra, .okta:
            // Entra ID and Okta put scopes in `scp` (an array at Okta, a string at Entra ID).
            cfg.scopeClaim = .scp
        case .google:
            // OIDC Core §15.6.2: Google's ID tokens say either spelling of its issuer.
            if cfg.issuer == "https://accounts.google.com" { cfg.issuerAliases = ["accounts.google.com"] }
        case .cognito:
            // Cognito access tokens have no `aud`: `client_id` names the app client, and
            // `token_use: access` tells them from ID tokens (which do have `aud`).
            cfg.audienceClaim = .client_id
            cfg.tokenUse = "access"
        case .auth0, .keycloak: break
        }
    }

    /// Where this provider puts roles; `audiences`: the issuer's (Keycloak keys client roles
    /// by client id).
    func roleClaims(audiences: [String]) -> [ClaimPath] {
        switch self {
        case .entra: RoleClaims.standard
        case .okta: [ClaimPath("groups")!]
        case .auth0: [ClaimPath("permissions")!]
        case .keycloak:
            [ClaimPath("realm_access.roles")!]
                + audiences.compactMap { ClaimPath(components: ["resource_access", $0, "roles"]) }
        case .google: []
        case .cognito: [ClaimPath("cognito:groups")!]
        }
    }
}

extension IssuerConfig {
    /// The role claims in force: `role_claims`, else the provider's, else `roles`.
    var effectiveRoleClaims: [ClaimPath] {
        roleClaims ?? provider?.roleClaims(audiences: audiences) ?? RoleClaims.standard
    }

    /// What its `provider` preset set, one line per key it did not set itself: what
    /// `check-config` prints. Empty without a provider.
    var presetNotes: [String] {
        let explicit = explicitKeys
        guard let provider else { return [] }
        var set: [String] = []
        if !explicit.contains("scope_claim") { set.append("scope_claim: \(scopeClaim.rawValue)") }
        if !explicit.contains("role_claims") {
            set.append("role_claims: [\(effectiveRoleClaims.map(\.description).joined(separator: ", "))]")
        }
        if !explicit.contains("audience_claim") { set.append("audience_claim: \(audienceClaim.rawValue)") }
        if !explicit.contains("token_use"), let tokenUse { set.append("token_use: \(tokenUse)") }
        if !explicit.contains("issuer_aliases"), !issuerAliases.isEmpty {
            set.append("issuer_aliases: [\(issuerAliases.joined(separator: ", "))]")
        }
        var notes = ["issuers.\(name) (provider: \(provider.rawValue)): " + set.joined(separator: ", ")]
        if provider == .entra && issuer.hasPrefix("https://login.microsoftonline.com/") && issuer.hasSuffix("/v2.0") {
            notes.append(
                "issuers.\(name): v2.0 issuer; an API whose app registration has accessTokenAcceptedVersion null or 1 "
                    + "gets v1 tokens (iss https://sts.windows.net/TENANT/), which this issuer refuses: set it to 2, or "
                    + "accept both with a {tenant} issuer and issuer_aliases: [\"https://sts.windows.net/{tenant}/\"]")
        }
        return notes
    }
}

extension ConfigParser {
    /// `require.roles` reads the role claims of the issuer that verified a token; a session's
    /// claims come from ID tokens and userinfo, whose roles no issuer setting describes.
    static func rolesOnLoginRoutes(_ cfg: GatewayConfig, _ r: ConfigReader) {
        func hasRoles(_ req: AuthorizationRequirement) -> Bool {
            !req.roles.isEmpty || req.anyOf.contains(where: hasRoles)
        }
        for route in cfg.routes {
            guard let req = route.options.auth.loginRoute?.sessionRequirement, hasRoles(req) else { continue }
            r.problem(
                "routes[\(route.index)].require.roles", nil,
                "applies to tokens (their issuer's role_claims); on a login route use require.claims, e.g. { roles: { contains: NAME } }"
            )
        }
    }

}

extension GatewayConfig {
    /// What the issuers' `provider` presets set (`check-config` prints it).
    public var presetNotes: [String] { issuers.values.sorted { $0.name < $1.name }.flatMap(\.presetNotes) }
}
