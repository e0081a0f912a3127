import JOSE
import Reactor

/// The token stage of a routed request: the authenticator's verdict on a `bearer`, `dpop` or
/// `token` route, turned into an admission (identity headers, the caller for the log) or
/// into the refusal it is answered with (RFC 6750 §3, RFC 9449 §7.1).
extension Worker {
    /// `bearer` / `dpop` / `token` routes (and `login_or_token` without a session cookie);
    /// `tokens`: the route's token settings; `form`: the tokens of a form body already read, and
    /// the body to forward in its place.
    func authenticateToken(
        _ ex: ServerExchange, head: HTTPRequestHead, ctx: RequestContext, plan: RoutePlan, tokens: TokenRouteConfig,
        target: TokenAuthenticator.Target,
        query: String?, form: (tokens: [String], kept: [UInt8])?, allowed: @escaping Admitted
    ) {
        let route = plan.route
        // Made with the plan from `route.auth.tokenRoute`, which `tokens` is.
        guard let rules = plan.tokens else { preconditionFailure("a token route's plan has its token rules") }
        authenticator.authenticate(
            head, tokens: tokens, plan: rules, target: target, query: query, formTokens: form?.tokens ?? []
        ) { [unowned self] decision in
            switch decision {
            case .allow(let caller):
                let token = caller.token
                ctx.subject = token.subject
                ctx.clientID = token.clientID
                ctx.issuer = token.issuer
                if ctx.upgrade && tokens.closeAtTokenExpiry { ctx.tunnelTokenExpiry = token.expiresAt }
                ctx.responseHeaders = caller.responseHeaders
                if tokens.dpop != nil { ctx.droppedResponseHeaders = ["DPoP-Nonce"] }
                var identity = self.identityHeaders(route, token.claims, ctx)
                if let jkt = caller.jkt, let name = tokens.dpop?.jktHeader { identity.append((name, jkt)) }
                let memo = self.rememberBearer(ex, head, caller: caller, plan: plan, ctx: ctx, identity: identity)
                if let a = self.tokenAssertion(route, token) { identity.append(a) }
                allowed(
                    ctx,
                    Admission(
                        identity: identity, session: false, body: form.map { BufferedRequestBody($0.kept) },
                        claims: token.claims, token: token, tokenScheme: caller.jkt == nil ? "Bearer" : "DPoP",
                        presentedToken: caller.presented, bearerMemo: memo))
            case .unavailable(let reason, let detail):
                ctx.rejection = .unavailable(reason)
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable",
                        description: "the gateway cannot verify tokens right now",
                        requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: detail))
            case .deny(let denial):
                let failure = AuthFailure(denial)
                ctx.rejection = .refused(failure)
                self.metrics.authFailure(failure)
                self.answer(ex, ctx, ErrorResponse.auth(denial, requestID: ctx.requestID))
            }
        }
    }
}
