import OAuth
import Reactor

/// A `token_exchange` route's stage after authentication: the caller's token, admitted, is
/// traded at the AS (RFC 8693, `TokenExchanger`) and the issued one goes upstream as
/// `Authorization: Bearer`, or, DPoP-bound (`dpop: true`), as `Authorization: DPoP` with a
/// fresh proof of the gateway's key. The caller's own token and DPoP proof never go
/// (RouteResolver drops them; check-config refuses forward_token and forward_proof).
final class TokenExchangeStage: ModuleStage {
    static let position = StagePosition.beforeUpstream
    /// Nothing goes upstream from a decision: no token is needed for it.
    static var judgesDecisions: Bool { false }

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> TokenExchangeStage? {
        plan.exchange.map {
            TokenExchangeStage(
                nonces: services.proxying.upstreamNonces, exchanger: services.exchanger, exchange: $0,
                upstreamTimeout: plan.upstream?.config.timeout
            )
        }
    }

    /// The upstreams' DPoP nonces (the services hold them and the plans that hold their
    /// stages).
    unowned(unsafe) let nonces: UpstreamNonces
    /// This worker's exchanger (the module's service, held as the nonces are).
    unowned(unsafe) let exchanger: TokenExchanger
    let exchange: TokenExchangeConfig
    /// The most a request waits for its exchange: the exchange's own bound, or the route's
    /// upstream `timeout` when that is shorter (a caller's request never waits longer on the
    /// AS than it would on the upstream).
    let wait: Double

    init(nonces: UpstreamNonces, exchanger: TokenExchanger, exchange: TokenExchangeConfig, upstreamTimeout: Double?) {
        self.nonces = nonces
        self.exchanger = exchanger
        self.exchange = exchange
        wait = min(CallBounds.tokenExchange.total, upstreamTimeout ?? .infinity)
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let admission = request.admitted
        // A preflight carries no credential; the token this connection's last request was
        // admitted and exchanged with (the same token, route and config: the memo says so)
        // goes on with the exchanged one while it is still good.
        if admission.preflight { return .proceed }
        if let issued = admission.bearerMemo?.kept[TokenExchanger.Issued.Key.self],
            issued.until > request.services.wallClock.seconds
        {
            withExchanged(issued, admission, request)
            return .proceed
        }
        let ctx = request.context
        guard let subject = admission.presentedToken, !subject.isEmpty else {
            // Token routes admit only with a token; this is a gateway fault, not the caller's.
            return .answer(
                ErrorResponse.make(
                    500, error: "server_error", description: "the gateway could not exchange the token",
                    requestID: ctx.requestID, detail: "token_exchange: no presented token in the admission"))
        }
        let config = exchange
        exchanger.exchange(subject, config, wait: wait) { [self] outcome in
            switch outcome {
            case .issued(let issued):
                admission.bearerMemo?.kept[TokenExchanger.Issued.Key.self] = issued
                withExchanged(issued, admission, request)
                request.resume()
            case .refused(let error):
                // RFC 8693 §2.2.2: the AS will not issue a token for the upstream to this
                // caller's token; no other token would be exchanged either, so 403.
                request.answer(
                    ErrorResponse.make(
                        403, error: "access_denied",
                        description: "the authorization server refused to exchange the token for this upstream",
                        requestID: ctx.requestID, detail: "token_exchange: \(config.issuer) answered \(error)"))
            case .unavailable(let why):
                ctx.rejection = .unavailable(.tokenNotExchanged)
                request.answer(
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable",
                        description: "the gateway cannot get a token for the upstream right now",
                        requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: "token_exchange: \(why)"))
            }
        }
        return .suspend
    }

    /// Adds the exchanged token to the admission: "Bearer …", or "DPoP …" (RFC 9449 §7.1) with
    /// a proof per request, signed for the upstream's URL once the request's target is known.
    private func withExchanged(_ issued: TokenExchanger.Issued, _ admission: Admission, _ request: RoutedRequest) {
        admission.identity.append(("Authorization", issued.authorization))
        if issued.token.isDPoPBound {
            admission.upstreamProof = UpstreamProof(
                token: issued.token.token, signer: exchanger.proofSigner, now: request.services.wallClock.seconds,
                nonces: nonces)
        }
    }
}
