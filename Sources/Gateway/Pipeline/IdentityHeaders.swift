import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// What a route tells its upstream about an authenticated caller: the identity headers it
/// maps from the claims, the session's tokens (`pass_access_token`, `pass_id_token`) and the
/// signed identity assertion (`identity_assertion`). One per worker (`Proxying.identity`), used
/// by the authentication stages.
final class UpstreamIdentity {
    let log: Logger
    let wallClock: any WallClock
    /// Signed identity assertions, cached per caller (the `IdentityAssertions` module's).
    let assertions: IdentityAssertions
    /// The key a DPoP-bound session token's proofs are signed with (the token exchange's).
    let exchanger: TokenExchanger
    /// The newest DPoP nonce of each upstream.
    let nonces: UpstreamNonces

    init(
        log: Logger, wallClock: any WallClock, assertions: IdentityAssertions, exchanger: TokenExchanger,
        nonces: UpstreamNonces
    ) {
        self.log = log
        self.wallClock = wallClock
        self.assertions = assertions
        self.exchanger = exchanger
        self.nonces = nonces
    }

    /// The route's identity headers for these claims. A claim whose value cannot be a header
    /// value (a control byte: RFC 9110 §5.5) gives no header, and the log says which one —
    /// never the value, which is the caller's.
    func headers(_ route: RouteConfig, _ claims: JSONObject, _ ctx: RequestContext) -> [(String, String)] {
        route.options.forwarding.identityHeaders.values(for: claims) { header in
            self.log.warning(
                "identity header omitted",
                metadata: [
                    "request_id": .string(ctx.requestID), "route": .string(ctx.route), "header": .string(header),
                    "reason": "the claim's value has a character a header value may not hold (RFC 9110 §5.5)"
                ])
        }
    }

    /// Adds the route's headers mapped from its path-template variables (`"{order_id}"`) to
    /// `identity`. Kept out of `identityHeaders`: those depend on the caller alone, and a
    /// connection's memo reuses them for its next request on the route (`BearerMemo`); these
    /// depend on the request's path.
    static func appendPathParameterHeaders(
        _ route: RouteConfig, _ ctx: RequestContext, to identity: inout [(String, String)]
    ) {
        guard !route.options.forwarding.identityHeaders.parameters.isEmpty else { return }
        let parameters = ctx.pathParameters
        identity += route.options.forwarding.identityHeaders.values(forParameters: { parameters[$0] })
    }

    /// Adds the session route's token and assertion headers to `headers`, with the proof a
    /// DPoP-bound session token needs upstream (a client with `dpop: true`: `Authorization:
    /// DPoP`, RFC 9449 §7.1); nil when the route passes the access token and the session's
    /// has expired (never sent: the caller answers 503).
    func sessionHeaders(
        _ route: RouteConfig, _ session: Session, _ headers: [(String, String)], config: GatewayConfig
    ) -> (headers: [(String, String)], proof: UpstreamProof?)? {
        var out = headers
        var proof: UpstreamProof?
        let now = wallClock.seconds
        if let name = route.options.forwarding.passAccessToken, let token = session.accessToken {
            // The refresh that should have replaced it failed (the AS or the store is down).
            guard now < session.accessExpiresAt else { return nil }
            if name.lowercased() != "authorization" {
                out.append((name, token))
            } else if config.clients[session.client]?.login.dpop == true {
                // The login asked for DPoP and the AS bound the token (a Bearer answer ends the
                // login): it is good only with a proof from the key it is bound to.
                out.append((name, "DPoP \(token)"))
                proof = UpstreamProof(
                    token: token, signer: exchanger.proofSigner, now: now, nonces: nonces)
            } else {
                out.append((name, "Bearer \(token)"))
            }
        }
        if let name = route.options.forwarding.passIDToken, let idToken = session.idToken {
            out.append((name, idToken))
        }
        let idp = config.clients[session.client]?.issuer.flatMap { config.issuers[$0]?.issuer }
        if let a = assertions.header(
            route, caller: "s " + session.id, claims: session.claims, now: now, idp: idp, client: session.client)
        {
            out.append(a)
        }
        return (out, proof)
    }

    /// The assertion of a token route, cached per token (its issuer, jti or subject, and expiry);
    /// it expires no later than the token.
    func tokenAssertion(_ route: RouteConfig, _ token: VerifiedAccessToken, config: GatewayConfig) -> (String, String)?
    {
        // Asked only for a route with `identity_assertion` (TokenStage.assertion checks).
        let caller = "t \(token.issuer) \(token.claims["jti"]?.string ?? "") \(token.subject ?? "") \(token.expiresAt)"
        return assertions.header(
            route, caller: caller, claims: token.claims, now: wallClock.seconds,
            notAfter: token.expiresAt, idp: config.issuers[token.issuer]?.issuer)
    }
}
