import Foundation
import OAuth

/// A route's refusals, shaped by the schemes it accepts: `bearer` → a `Bearer` challenge,
/// `dpop` → `DPoP` with the accepted `algs` (RFC 9449 §7.1), `token` → both. The error goes
/// on the scheme the client used; the others stay bare, so a client learns what else would
/// work. Routes that require DPoP nonces send a fresh one with every 401 (§9: the client
/// then needs no extra round trip). A route with a `resource` names its Protected Resource
/// Metadata in every challenge (RFC 9728 §5.1), and the scopes it needs in its 401s as well
/// as its 403s (MCP authorization, 2025-11-25: the client then asks for them at once). A
/// class: the request's callbacks share it instead of each copying the route's token settings.
final class AuthRefusals {
    let tokens: TokenRouteConfig
    let nonces: DPoPNonces?
    /// "Now" for the nonces a 401 carries.
    let wallClock: any WallClock
    /// The clock skew the route's issuers allow (the largest): how far ahead an `auth_time`
    /// may be. It does not widen a token's `max_age` (only a login's).
    let leeway: Int64

    init(tokens: TokenRouteConfig, nonces: DPoPNonces?, wallClock: any WallClock, leeway: Int64 = 0) {
        self.tokens = tokens
        self.nonces = nonces
        self.wallClock = wallClock
        self.leeway = leeway
        resourceMetadata = tokens.resource?.identifier.metadataURL
        let scopes = tokens.requirement.scopes
        routeScope = tokens.resource == nil || scopes.isEmpty ? nil : scopes
    }

    /// RFC 9728 §5.1 `resource_metadata`, on every challenge of a route with a `resource`.
    private let resourceMetadata: String?
    /// The route's scopes, on every challenge of a route with a `resource`.
    private let routeScope: [String]?

    private var schemes: [String] {
        switch tokens.schemes {
        case .bearer: return ["Bearer"]
        case .dpop: return ["DPoP"]
        case .bearerOrDPoP: return ["Bearer", "DPoP"]
        }
    }

    private var algs: [String]? { tokens.dpop.map { $0.algorithms.map(\.rawValue).sorted() } }

    private func challenges(error: OAuthErrorCode?, description: String?, on scheme: String?, scope: [String]? = nil)
        -> [Challenge]
    {
        let target = scheme.flatMap { schemes.contains($0) ? $0 : nil } ?? schemes[0]
        return schemes.map { s in
            let withError = error != nil && s == target
            return Challenge(
                scheme: s, realm: tokens.realm, error: withError ? error : nil,
                errorDescription: withError ? description : nil, scope: (withError ? scope : nil) ?? routeScope,
                algs: s == "DPoP" ? algs : nil, resourceMetadata: resourceMetadata)
        }
    }

    private func nonceHeaders(status: Int) -> [(String, String)] {
        guard status == 401, tokens.dpop?.nonceRequired == true, let nonces else { return [] }
        return [("DPoP-Nonce", nonces.issue(now: wallClock.seconds))]
    }

    /// 401 for a request without credentials (RFC 6750 §3.1: no error code).
    func bare(detail: String) -> AuthDenial {
        AuthDenial(
            status: 401, challenges: challenges(error: nil, description: nil, on: nil),
            headers: nonceHeaders(status: 401), detail: detail)
    }

    func refuse(_ status: Int, _ code: OAuthErrorCode, _ description: String, scheme: String?, detail: String? = nil)
        -> AuthDenial
    {
        AuthDenial(
            status: status, challenges: challenges(error: code, description: description, on: scheme),
            headers: nonceHeaders(status: status), detail: detail ?? description)
    }

    /// 401 `invalid_token` when the route has a `resource` its token's `aud` does not contain
    /// (RFC 8707 §2: the token was issued for another resource), whatever the issuer's
    /// `audiences` accepted.
    func checkResource(_ token: VerifiedAccessToken, scheme: String) -> AuthDenial? {
        guard let resource = tokens.resource?.identifier, !resource.isAudience(of: token.claims) else { return nil }
        return refuse(
            401, .invalid_token, "the token's audience (aud) does not include this resource, \(resource.uri)",
            scheme: scheme, detail: "aud lacks the route's resource \(resource.uri)")
    }

    /// 403 `insufficient_scope` for one call on an MCP route: `scope` names what the call
    /// needs (RFC 6750 §3.1), so the client can ask for it and try again.
    /// The scopes a challenge names: the narrowest the operation needs (the rules name those),
    /// never `offline_access`, which grants a refresh token, not access (MCP 2026-07-28: it
    /// SHOULD NOT appear in challenges). nil: none to name.
    static func challenged(_ scopes: [String]) -> [String]? {
        let named = scopes.filter { $0 != "offline_access" }
        return named.isEmpty ? nil : named
    }

    func insufficientScope(needs scopes: [String], scheme: String, detail: String) -> AuthDenial {
        AuthDenial(
            status: 403,
            challenges: challenges(
                error: .insufficient_scope, description: "the token does not grant this call", on: scheme,
                scope: Self.challenged(scopes)),
            detail: detail)
    }

    /// 403 `insufficient_scope` when the token lacks the route's scopes or claims; then 401
    /// `insufficient_user_authentication` when the user's authentication is not what the
    /// route asks (RFC 9470 §3: a new token, after a stronger or fresher login, would do).
    func authorize(_ token: VerifiedAccessToken, scheme: String) -> AuthDenial? {
        guard
            let failure = tokens.requirement.check(
                token.claims, scopeClaim: token.scopeClaim, roleClaims: token.roleClaims, issuer: token.issuer,
                implication: token.scopeImplication)
        else { return stepUp(token, scheme: scheme) }
        let detail = failure.description
        let scope = Self.challenged(tokens.requirement.scopes)
        return AuthDenial(
            status: 403,
            challenges: challenges(
                error: .insufficient_scope, description: "the token does not grant access to this resource",
                on: scheme, scope: scope),
            detail: detail)
    }

    /// RFC 9470 §3: the challenge says which `acr_values` and which `max_age` would do.
    private func stepUp(_ token: VerifiedAccessToken, scheme: String) -> AuthDenial? {
        let requirement = tokens.requirement
        guard requirement.hasStepUp,
            let failure = requirement.stepUpFailure(token.claims, now: wallClock.seconds, leeway: leeway)
        else { return nil }
        let description =
            switch failure {
            case .acr: "a different authentication level is required"
            case .noAuthTime, .tooOld, .futureAuthTime, .unusableAuthTime: "more recent authentication is required"
            }
        var all = challenges(error: .insufficient_user_authentication, description: description, on: scheme)
        let target = schemes.contains(scheme) ? scheme : schemes[0]
        for i in all.indices where all[i].scheme == target {
            all[i].acrValues = requirement.acr.isEmpty ? nil : requirement.acr
            all[i].maxAge = requirement.maxAge
        }
        return AuthDenial(
            status: 401, challenges: all, headers: nonceHeaders(status: 401), detail: failure.description)
    }
}
