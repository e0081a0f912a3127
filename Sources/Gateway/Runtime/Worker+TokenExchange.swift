import OAuth
import Reactor

/// A `token_exchange` route's last stage before the upstream: the caller's token, admitted,
/// is traded at the AS (RFC 8693, `TokenExchanger`) and the issued one goes upstream as
/// `Authorization: Bearer`, or, DPoP-bound (`dpop: true`), as `Authorization: DPoP` with a
/// fresh proof of the gateway's key. The caller's own token and DPoP proof never go
/// (RequestPipeline drops them; check-config refuses forward_token and forward_proof).
extension Worker {
    /// The admission as it goes upstream when no exchange is needed now: a preflight (it
    /// carries no credential), or the token this connection's last request was admitted and
    /// exchanged with — the same token, route and config (the memo says so), the exchanged
    /// one still good. nil: `exchangeToken` must run.
    func exchangedAtOnce(_ admission: Admission) -> Admission? {
        if admission.preflight { return admission }
        guard let memo = admission.bearerMemo, let issued = memo.exchanged, issued.until > wallClock.seconds
        else { return nil }
        return withExchanged(issued, admission)
    }

    func exchangeToken(
        _ ex: ServerExchange, _ ctx: RequestContext, plan: RoutePlan, admission: Admission,
        then forward: @escaping Admitted
    ) {
        if let admitted = exchangedAtOnce(admission) {
            forward(ctx, admitted)
            return
        }
        guard let config = plan.exchange else { preconditionFailure("only token_exchange routes exchange") }
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
            case .issued(let issued):
                admission.bearerMemo?.exchanged = issued
                forward(ctx, self.withExchanged(issued, admission))
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

    /// The admission with the exchanged token: "Bearer …", or "DPoP …" (RFC 9449 §7.1) with
    /// a proof per request, signed for the upstream's URL once the request's target is known.
    private func withExchanged(_ issued: TokenExchanger.Issued, _ admission: Admission) -> Admission {
        var admitted = admission
        admitted.identity.append(("Authorization", issued.authorization))
        if issued.token.isDPoPBound {
            admitted.upstreamProof = UpstreamProof(
                token: issued.token.token, signer: exchanger.proofSigner, now: wallClock.seconds, nonces: upstreamNonces
            )
        }
        return admitted
    }
}
