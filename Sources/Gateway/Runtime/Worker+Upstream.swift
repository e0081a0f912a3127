import Foundation
import JOSE
import OAuth
import Reactor

/// What a route tells its upstream about an authenticated caller beyond the identity headers:
/// the session's tokens (`pass_access_token`, `pass_id_token`) and the signed identity
/// assertion (`identity_assertion`).
extension Worker {
    /// Adds the session route's token and assertion headers to `headers`; nil when the route
    /// passes the access token and the session's has expired (never sent: the caller answers 503).
    func sessionUpstreamHeaders(_ route: RouteConfig, _ session: Session, _ headers: [(String, String)]) -> [(
        String, String
    )]? {
        var out = headers
        let now = wallClock.seconds
        if let name = route.options.passAccessToken, let token = session.accessToken {
            // The refresh that should have replaced it failed (the AS or the store is down).
            guard now < session.accessExpiresAt else { return nil }
            out.append((name, name.lowercased() == "authorization" ? "Bearer \(token)" : token))
        }
        if let name = route.options.passIDToken, let idToken = session.idToken { out.append((name, idToken)) }
        let idp = config.clients[session.client]?.issuer.flatMap { config.issuers[$0]?.issuer }
        if let a = assertions.header(
            route, caller: "s " + session.id, claims: session.claims, now: now, idp: idp, client: session.client)
        {
            out.append(a)
        }
        return out
    }

    /// The assertion of a token route, cached per token (its issuer, jti or subject, and expiry);
    /// it expires no later than the token.
    func tokenAssertion(_ route: RouteConfig, _ token: VerifiedAccessToken) -> (String, String)? {
        guard route.options.identityAssertion != nil else { return nil }
        let caller = "t \(token.issuer) \(token.claims["jti"]?.string ?? "") \(token.subject ?? "") \(token.expiresAt)"
        return assertions.header(
            route, caller: caller, claims: token.claims, now: wallClock.seconds,
            notAfter: token.expiresAt, idp: config.issuers[token.issuer]?.issuer)
    }
}
