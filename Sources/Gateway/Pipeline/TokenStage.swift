import JOSE
import OAuth
import Reactor

/// A `bearer`, `dpop` or `token` route's authentication (and `login_or_token`'s when no
/// session cookie came): the authenticator's verdict on the request's token, turned into an
/// admission (identity headers, the caller for the log) or into the refusal it is answered
/// with (RFC 6750 §3, RFC 9449 §7.1). The Bearer token this connection was admitted with on
/// this route before admits at once (`BearerMemo`).
final class TokenStage: Stage {
    /// This worker's token checks and verified-token cache, its login (a `login_or_token`
    /// route's cookie), what goes upstream of a caller, and its metrics. Unowned: the
    /// services hold them and the plans that hold their stages.
    unowned(unsafe) let authenticator: TokenAuthenticator
    unowned(unsafe) let validator: AccessTokenValidator
    unowned(unsafe) let login: LoginService
    unowned(unsafe) let identity: UpstreamIdentity
    unowned(unsafe) let metrics: WorkerMetrics
    let route: RouteConfig
    let tokens: TokenRouteConfig
    /// Made with the plan from `route.options.auth.tokenRoute`, which `tokens` is.
    let rules: TokenRoutePlan
    /// `login_or_token`: a session cookie makes the session decide (a token beside it is not
    /// looked at).
    let session: SessionStage?
    /// Shared Signals' revocations on this worker, asked on every token, and its transmitters
    /// (their counts of revoked requests), held as the above.
    unowned(unsafe) let revocations: RevocationSnapshot
    unowned(unsafe) let signals: SharedSignalsHub
    /// The key sets' tables on this worker, asked on every key (held as the above).
    unowned(unsafe) let apiKeys: APIKeyTables

    /// A route's stage, with what it uses of the worker's services.
    static func make(
        _ services: WorkerServices, route: RouteConfig, tokens: TokenRouteConfig, rules: TokenRoutePlan,
        session: SessionStage? = nil
    ) -> TokenStage {
        TokenStage(
            authentication: services.authentication, identity: services.proxying.identity, metrics: services.metrics,
            revocations: services.revocations, signals: services.signals, apiKeys: services.apiKeys, route: route,
            tokens: tokens, rules: rules,
            session: session)
    }

    init(
        authentication: Authentication, identity: UpstreamIdentity, metrics: WorkerMetrics,
        revocations: RevocationSnapshot, signals: SharedSignalsHub, apiKeys: APIKeyTables, route: RouteConfig,
        tokens: TokenRouteConfig,
        rules: TokenRoutePlan, session: SessionStage?
    ) {
        authenticator = authentication.authenticator
        validator = authentication.tokens
        login = authentication.login
        self.identity = identity
        self.metrics = metrics
        self.route = route
        self.tokens = tokens
        self.rules = rules
        self.session = session
        self.revocations = revocations
        self.signals = signals
        self.apiKeys = apiKeys
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        if request.admission != nil { return .proceed }
        if let session, Cookies(request.head.fields).values[login.settings.sessionCookie] != nil {
            return session.run(request)
        }
        if !tokens.apiKeys.isEmpty {
            switch tokens.apiKeys.presented(request.head.fields) {
            case .none:
                if tokens.keysOnly { return noKey(request) }
            case .ambiguous(let why):
                return ambiguous(request, why)
            case .key(let key, let sets, let inAuthorization):
                // RFC 6750 §2: one credential per request; the gateway does not choose.
                let authorization = request.head.fields.firstAndCount("Authorization").count
                if inAuthorization ? authorization > 1 : (authorization > 0 && !tokens.keysOnly) {
                    return ambiguous(request, "a token and an API key: send one")
                }
                return admitKey(request, key: key, sets: sets)
            }
        }
        if session == nil, let admission = admitRemembered(request) {
            request.admission = admission
            return .proceed
        }
        let ex = request.exchange
        let origin = request.origin
        let target = TokenAuthenticator.Target(
            scheme: origin.forwardedProto, host: origin.forwardedHost ?? "",
            fromTrustedProxy: origin.originFromTrustedProxy, path: request.path,
            certificate: request.isDecision ? nil : ex.connection.clientCertificate)
        // RFC 6750 §2.2: only a route that accepts tokens in a form body reads the body
        // before deciding (bounded); every other route decides on the head alone. A decision
        // has no body.
        guard !request.isDecision, tokens.schemes.acceptsBearer, tokens.tokenInBody,
            TokenAuthenticator.mayCarryFormToken(request.head, hasContent: request.hasContent)
        else {
            authenticate(request, target: target, form: nil)
            return .suspend
        }
        let keep = tokens.forwardToken
        request.services.readOwnBody(ex, request.context) { [self] bytes in
            authenticate(request, target: target, form: TokenAuthenticator.formTokens(bytes, keepToken: keep))
        }
        return .suspend
    }

    /// `form`: the tokens of a form body already read, and the body to forward in its place.
    private func authenticate(
        _ request: RoutedRequest, target: TokenAuthenticator.Target, form: (tokens: [String], kept: [UInt8])?
    ) {
        let ctx = request.context
        authenticator.authenticate(
            request.head, tokens: tokens, plan: rules, target: target, query: request.query,
            formTokens: form?.tokens ?? []
        ) { [self] decision in
            switch decision {
            case .allow(let caller):
                let token = caller.token
                if let denial = revocation(of: token, scheme: caller.jkt == nil ? "Bearer" : "DPoP", ctx: ctx) {
                    let failure = AuthFailure(denial)
                    ctx.rejection = .refused(failure)
                    metrics.authFailure(failure)
                    request.answer(ErrorResponse.auth(denial, requestID: ctx.requestID))
                    return
                }
                ctx.authenticated(
                    CallerIdentity(subject: token.subject, clientID: token.clientID, issuer: token.issuer))
                if ctx.kind.isUpgrade {
                    if tokens.closeAtTokenExpiry { ctx.tunnel.tokenExpiry = token.expiresAt }
                    ctx.tunnel.caller = RevocationSubject(
                        claims: token.claims, issuer: token.issuer, issuedAt: token.issuedAt)
                }
                ctx.response.added = caller.responseHeaders
                if tokens.dpop != nil { ctx.response.dropped = ["DPoP-Nonce"] }
                var identity = self.identity.headers(route, token.claims, ctx)
                if let jkt = caller.jkt, let name = tokens.dpop?.jktHeader { identity.append((name, jkt)) }
                let memo = remember(request, caller: caller, identity: identity)
                UpstreamIdentity.appendPathParameterHeaders(route, ctx, to: &identity)
                if let a = assertion(token, request) { identity.append(a) }
                request.admission = Admission(
                    identity: identity, session: false, body: form.map { BufferedRequestBody($0.kept) },
                    claims: token.claims, token: token, tokenScheme: caller.jkt == nil ? "Bearer" : "DPoP",
                    presentedToken: caller.presented, bearerMemo: memo)
                request.resume()
            case .unavailable(let reason, let detail):
                ctx.rejection = .unavailable(reason)
                request.answer(
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable",
                        description: "the gateway cannot verify tokens right now",
                        requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: detail))
            case .deny(let denial):
                let failure = AuthFailure(denial)
                ctx.rejection = .refused(failure)
                metrics.authFailure(failure)
                request.answer(ErrorResponse.auth(denial, requestID: ctx.requestID))
            }
        }
    }
}

extension TokenStage {
    /// The route's signed identity assertion for this token (`identity_assertion`); nil on a
    /// route without one, which reads nothing more.
    func assertion(_ token: VerifiedAccessToken, _ request: RoutedRequest) -> (String, String)? {
        guard route.options.forwarding.identityAssertion != nil else { return nil }
        return identity.tokenAssertion(route, token, config: request.services.config)
    }
}

extension TokenStage {
    /// The admission of the Bearer token this connection was admitted with on this route,
    /// if the request carries the same one the same way (see `BearerMemo` for when that
    /// stands for the full check).
    fileprivate func admitRemembered(_ request: RoutedRequest) -> Admission? {
        guard let connection = request.exchange.connection.context,
            let memo = unsafeDowncast(connection, to: ConnectionMemo.self).state[BearerMemo.Key.self],
            memo.routeIndex == route.index, memo.generation == validator.generation,
            validator.wallClock.seconds < memo.validUntil, tokens.schemes.acceptsBearer,
            memo.matches(request.head.fields, query: request.query)
        else { return nil }
        // A form body may carry a token too (RFC 6750 §2.2): then the full path decides.
        if !request.isDecision && tokens.tokenInBody
            && TokenAuthenticator.mayCarryFormToken(request.head, hasContent: request.hasContent)
        {
            return nil
        }
        let token = memo.caller.token
        // Revoked since it was remembered: the full path refuses it.
        if revocations.standing, revocation(of: token, scheme: "Bearer") != nil { return nil }
        // A certificate-bound token was admitted on a proxied request over this connection's
        // certificate; a decision on the same connection judges another client's request, for
        // which that certificate proves nothing (the full path refuses it).
        if request.isDecision && token.isSenderConstrained { return nil }
        let ctx = request.context
        ctx.authenticated(CallerIdentity(subject: memo.subject, clientID: memo.clientID, issuer: token.issuer))
        if ctx.kind.isUpgrade {
            if tokens.closeAtTokenExpiry { ctx.tunnel.tokenExpiry = token.expiresAt }
            ctx.tunnel.caller = RevocationSubject(claims: token.claims, issuer: token.issuer, issuedAt: token.issuedAt)
        }
        if tokens.dpop != nil { ctx.response.dropped = ["DPoP-Nonce"] }
        var identity = memo.identity
        UpstreamIdentity.appendPathParameterHeaders(route, ctx, to: &identity)
        if let a = assertion(token, request) { identity.append(a) }
        return Admission(
            identity: identity, session: false, body: nil, claims: token.claims, token: token,
            presentedToken: memo.caller.fromAuthorization, bearerMemo: memo)
    }

    /// Keeps a Bearer admission for the connection's next requests, when it may stand for
    /// them (`BearerMemo`): the token came alone in the Authorization field, and the
    /// verified-token cache holds it.
    fileprivate func remember(_ request: RoutedRequest, caller: AuthenticatedCaller, identity: [(String, String)])
        -> BearerMemo?
    {
        guard caller.jkt == nil, caller.responseHeaders.isEmpty, let token = caller.fromAuthorization,
            var until = validator.trustedUntil(token)
        else { return nil }
        // `max_age` (RFC 9470): the admission stands no longer than the authentication does.
        if let fresh = tokens.requirement.stepUpValidUntil(caller.token.claims) { until = min(until, fresh + 1) }
        var authorization: [UInt8]?
        request.head.fields.forEachValue(named: "Authorization") { authorization = Array($0) }
        guard let authorization else { return nil }
        let identityOf = request.context.caller
        let bearer = BearerMemo(
            authorization: authorization, routeIndex: route.index, generation: validator.generation,
            validUntil: until, caller: caller, identity: identity, subject: identityOf?.subject,
            clientID: identityOf?.clientID)
        ConnectionMemo.of(request.exchange.connection).state[BearerMemo.Key.self] = bearer
        return bearer
    }
}
