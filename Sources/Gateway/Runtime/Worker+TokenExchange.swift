import OAuth
import Reactor

/// A `token_exchange` route's last stage before the upstream: the caller's token, admitted,
/// is traded at the AS (RFC 8693, `TokenExchanger`) and the issued one goes upstream as
/// `Authorization: Bearer`, or, DPoP-bound (`dpop: true`), as `Authorization: DPoP` with a
/// fresh proof of the gateway's key. The caller's own token and DPoP proof never go
/// (RequestPipeline drops them; check-config refuses forward_token and forward_proof).
extension Worker {
    func exchangeToken(
        _ ex: ServerExchange, _ ctx: RequestContext, _ config: TokenExchangeConfig, admission: Admission,
        then forward: @escaping Admitted
    ) {
        // A preflight let through carries no credential, so there is nothing to exchange.
        guard !admission.preflight else {
            forward(ctx, admission)
            return
        }
        guard let subject = admission.presentedToken, !subject.isEmpty else {
            // Token routes admit only with a token; this is a gateway fault, not the caller's.
            answer(
                ex, ctx,
                ErrorResponse.make(
                    500, error: "server_error", description: "the gateway could not exchange the token",
                    requestID: ctx.requestID, detail: "token_exchange: no presented token in the admission"))
            return
        }
        exchanger.exchange(subject, config) { [unowned self] outcome in
            switch outcome {
            case .issued(let token):
                var admitted = admission
                if token.isDPoPBound, let signer = self.exchanger.proofSigner {
                    // RFC 9449 §7.1: the DPoP scheme, and a proof per request (RequestPipeline
                    // signs it for the upstream's URL once the request's target is known).
                    admitted.identity.append(("Authorization", "DPoP " + token.token))
                    admitted.upstreamProof = UpstreamProof(
                        token: token.token, signer: signer, now: self.wallClock.seconds)
                } else {
                    admitted.identity.append(("Authorization", "Bearer " + token.token))
                }
                forward(ctx, admitted)
            case .refused(let error):
                // RFC 8693 §2.2.2: the AS will not issue a token for the upstream to this
                // caller's token; no other token would be exchanged either, so 403.
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        403, error: "access_denied",
                        description: "the authorization server refused to exchange the token for this upstream",
                        requestID: ctx.requestID, detail: "token_exchange: \(config.issuer) answered \(error)"))
            case .unavailable(let why):
                ctx.rejection = .unavailable(.tokenNotExchanged)
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable",
                        description: "the gateway cannot get a token for the upstream right now",
                        requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: "token_exchange: \(why)"))
            }
        }
    }
}
