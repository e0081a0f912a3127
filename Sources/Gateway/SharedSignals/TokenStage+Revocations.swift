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

    /// `check` for a caller as a tunnel or a session keeps it: a claims change it has caught
    /// up with (a session refreshed since) does not count.
    func check(_ caller: RevocationSubject, now: Int64) -> RevocationTable.Revoked? {
        guard let revoked = check(caller.claims, issuer: caller.issuer, issuedAt: caller.issuedAt, now: now) else {
            return nil
        }
        // Only a claims change is left (`check` gives the most severe): the later time decides.
        guard revoked == .claimsChanged, let asOf = caller.claimsAsOf else { return revoked }
        return check(caller.claims, issuer: caller.issuer, issuedAt: asOf, now: now)
    }

    /// Notes a refusal on the request: the access log's `reason` and the server span's
    /// `tokengate.ssf.jti` say which event refused it.
    func note(
        _ revoked: RevocationTable.Revoked, _ claims: JSONObject, issuer: String, issuedAt: Int64?, now: Int64,
        on ctx: RequestContext
    ) {
        let jti = jti(
            sub: claims["sub"]?.string, email: claims["email"]?.string, issuer: issuer,
            iat: issuedAt ?? claims["iat"]?.int64, sid: claims["sid"]?.string, now: now)
        ctx.state[RevocationNote.Key.self] = RevocationNote(revoked, jti: jti)
    }
}

/// Whom a revocation is checked against: a token's or a session's claims, the `issuers:`
/// entry that vouched for them, when the credential was issued, and, for a session, since
/// when its claims are the IdP's (its last refresh; the refresh's own second counts as after
/// a change in it: the refresh a change asks for lands in that second).
struct RevocationSubject {
    let claims: JSONObject
    let issuer: String
    let issuedAt: Int64?
    var claimsAsOf: Int64? = nil

    init(claims: JSONObject, issuer: String, issuedAt: Int64?) {
        self.claims = claims
        self.issuer = issuer
        self.issuedAt = issuedAt
    }

    init(session: Session, issuer: String) {
        self.init(claims: session.claims, issuer: issuer, issuedAt: session.createdAt)
        claimsAsOf = (session.refreshedAt ?? session.createdAt) + 1
    }
}

/// Why a request was refused for a Shared Signals event, and which event.
final class RevocationNote {
    enum Key: RequestStateKey { typealias Value = RevocationNote }
    /// The access log's `reason`: `ssf_revoked`, `ssf_account_disabled` or `ssf_claims_changed`.
    let reason: String
    let jti: String?

    init(_ revoked: RevocationTable.Revoked, jti: String?) {
        reason =
            switch revoked {
            case .revoked: "ssf_revoked"
            case .disabled: "ssf_account_disabled"
            case .claimsChanged: "ssf_claims_changed"
            }
        self.jti = jti.map { String($0.prefix(128)) }
    }
}

extension VerifiedAccessToken {
    /// When the token was issued, for revocations: its `iat`; for an introspected token
    /// without one, when its AS last vouched for it (an answer given after an event is the
    /// AS's word that the token is good now).
    var issuedAt: Int64? { claims["iat"]?.int64 ?? vouchedAt }
}

extension TokenStage {
    /// The refusal of a token an event revoked (401 `invalid_token`, RFC 6750 §3.1), counted
    /// per route; nil for every other token.
    func revocation(of token: VerifiedAccessToken, scheme: String, ctx: RequestContext? = nil) -> AuthDenial? {
        // By the issuer entry that admitted it: an introspected token may have no `iss`, and a
        // multi-tenant issuer's tokens carry each their tenant's.
        guard revocations.standing,
            let revoked = revocations.check(
                token.claims, issuer: token.issuer, issuedAt: token.issuedAt, now: validator.wallClock.seconds)
        else { return nil }
        signals.countRevoked(route: route.name)
        if let ctx {
            revocations.note(
                revoked, token.claims, issuer: token.issuer, issuedAt: token.issuedAt, now: validator.wallClock.seconds,
                on: ctx)
        }
        let description =
            switch revoked {
            case .disabled: "the account is disabled"
            case .revoked: "the token has been revoked"
            case .claimsChanged: "the token has been revoked: its claims changed at the issuer"
            }
        return rules.refusals.refuse(
            401, .invalid_token, description, scheme: scheme, detail: "revoked by a shared signal (\(revoked))")
    }
}
