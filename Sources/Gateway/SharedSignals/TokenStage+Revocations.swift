import JOSE
import OAuth
import Reactor

/// Tokens and sessions a Shared Signals event revoked: refused on their next request, on
/// every route kind and in every decision form, by this worker's copy of the revocations.
extension RevocationSnapshot {
    /// Whether a token's or a session's claims (`sub`, `email`, `sid`, `iat`) are revoked;
    /// `issuer`: the `issuers:` entry that vouched for them. With no standing revocation, not one claim is read.
    func check(_ claims: JSONObject, issuer: String, issuedAt: Int64? = nil, now: Int64) -> RevocationTable.Revoked? {
        guard standing else { return nil }
        return check(
            sub: claims["sub"]?.string, email: claims["email"]?.string, issuer: issuer,
            iat: issuedAt ?? claims["iat"]?.int64, sid: claims["sid"]?.string, now: now)
    }
}

extension TokenStage {
    /// The refusal of a token an event revoked (401 `invalid_token`, RFC 6750 §3.1), counted
    /// per route; nil for every other token.
    func revocation(of token: VerifiedAccessToken, scheme: String) -> AuthDenial? {
        let revocations = services.revocations
        // By the issuer entry that admitted it: an introspected token may have no `iss`, and a
        // multi-tenant issuer's tokens carry each their tenant's.
        guard revocations.standing,
            let revoked = revocations.check(token.claims, issuer: token.issuer, now: services.wallClock.seconds)
        else { return nil }
        services.signals.countRevoked(route: route.name)
        let description = revoked == .disabled ? "the account is disabled" : "the token has been revoked"
        return rules.refusals.refuse(
            401, .invalid_token, description, scheme: scheme, detail: "revoked by a shared signal (\(revoked))")
    }
}
