import Reactor

/// `auth: login` (and `login_or_token` with a session cookie): the browser session decides.
/// A request with none is a page navigation sent to the login round trip (a decision answers
/// it as its ingress expects: `DecisionLoginAnswer`), or anything else, answered 401.
final class SessionStage: Stage {
    /// This worker's logins and sessions, what goes upstream of a caller, its metrics, and
    /// the Shared Signals transmitters (their counts of revoked requests). Unowned: the
    /// services hold them and the plans that hold their stages.
    unowned(unsafe) let login: LoginService
    unowned(unsafe) let identity: UpstreamIdentity
    unowned(unsafe) let metrics: WorkerMetrics
    unowned(unsafe) let signals: SharedSignalsHub
    let route: RouteConfig
    /// The route's session settings.
    let loginRoute: LoginRouteConfig

    /// Shared Signals' revocations on this worker, asked on every session (held as the above).
    unowned(unsafe) let revocations: RevocationSnapshot

    /// A route's stage, with what it uses of the worker's services.
    static func make(_ services: WorkerServices, route: RouteConfig, loginRoute: LoginRouteConfig) -> SessionStage {
        SessionStage(
            login: services.authentication.login, identity: services.proxying.identity, metrics: services.metrics,
            signals: services.signals, revocations: services.revocations, route: route, loginRoute: loginRoute)
    }

    init(
        login: LoginService, identity: UpstreamIdentity, metrics: WorkerMetrics, signals: SharedSignalsHub,
        revocations: RevocationSnapshot, route: RouteConfig, loginRoute: LoginRouteConfig
    ) {
        self.login = login
        self.identity = identity
        self.metrics = metrics
        self.signals = signals
        self.revocations = revocations
        self.route = route
        self.loginRoute = loginRoute
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        if request.admission != nil { return .proceed }
        let cookies = Cookies(request.head.fields)
        login.authenticate(route: loginRoute, cookies: cookies) { [self] decision in
            decide(request, cookies: cookies, decision, refreshed: false)
        }
        return .suspend
    }

    /// `refreshed`: the session was just refreshed for a Shared Signals `token-claims-change`;
    /// if that did not bring it past the change (the AS could not be asked), it waits.
    private func decide(
        _ request: RoutedRequest, cookies: Cookies, _ decision: LoginService.SessionDecision, refreshed: Bool
    ) {
        switch decision {
        case .allow(let session, let setCookies):
            switch revocation(session, request) {
            case .none:
                admit(request, session, setCookies: setCookies)
            case .ended:
                // As a logout: the cookie is cleared and the browser signs in again.
                let settings = login.settings
                noSession(
                    request, cookies: cookies,
                    clear: cookies.clear(settings.sessionCookie, secure: settings.secure, domain: settings.cookieDomain)
                )
            case .refresh where !refreshed:
                login.refresh(
                    session, cookies: cookies, forwardsToken: loginRoute.forwardSessionToken, forClaimsChange: true
                ) { [self] after in
                    decide(request, cookies: cookies, after, refreshed: true)
                }
            case .refresh:
                unavailable(
                    request, .tokenNotRefreshed, "its claims changed at the IdP and its tokens could not be refreshed")
            }
        case .unavailable(let reason, let why):
            unavailable(request, reason, why)
        case .none(let clear):
            noSession(request, cookies: cookies, clear: clear)
        }
    }

    private func unavailable(_ request: RoutedRequest, _ reason: UnavailableReason, _ why: String) {
        request.context.rejection = .unavailable(reason)
        request.answer(
            request.services.browserPage(
                request.exchange, request.context, title: "Temporarily unavailable",
                ErrorResponse.make(
                    503, error: "temporarily_unavailable",
                    description: "the gateway cannot check sessions right now",
                    requestID: request.context.requestID, headers: [("Retry-After", "5")], detail: why)))
    }

    private enum SessionRevocation {
        case none, ended, refresh
    }

    /// What a Shared Signals event did to the session: ended it (by its ID token's claims,
    /// issued at its login), or, for a `token-claims-change` since its tokens were last
    /// refreshed, asked for a refresh (an end when it has no refresh token).
    private func revocation(_ session: Session, _ request: RoutedRequest) -> SessionRevocation {
        guard revocations.standing else { return .none }
        let now = login.wallClock.seconds
        guard let issuer = request.services.config.clients[session.client]?.issuer else { return .none }
        let caller = RevocationSubject(session: session, issuer: issuer)
        guard let revoked = revocations.check(caller, now: now) else { return .none }
        if revoked == .claimsChanged, session.refreshToken != nil { return .refresh }
        signals.countRevoked(route: route.name)
        revocations.note(
            revoked, session.claims, issuer: issuer, issuedAt: session.createdAt, now: now, on: request.context)
        return .ended
    }

    private func admit(_ request: RoutedRequest, _ session: Session, setCookies: [String]) {
        let ctx = request.context
        let config = request.services.config
        // require.issuers / require.clients, rate limits, the PDP's subject: who vouched.
        let vouchedBy = config.clients[session.client]?.issuer
        ctx.authenticated(CallerIdentity(subject: session.subject, clientID: session.client, issuer: vouchedBy))
        if let requirement = loginRoute.sessionRequirement,
            let failure = requirement.check(
                session.claims, issuer: vouchedBy, client: session.client,
                implication: vouchedBy.flatMap { config.issuers[$0]?.scopeImplication })
        {
            ctx.rejection = .refused(.insufficientScope)
            metrics.authFailure(.insufficientScope)
            var r = ErrorResponse.make(
                403, error: "insufficient_scope", description: "this account may not use this resource",
                requestID: ctx.requestID, headers: setCookies.map { ("Set-Cookie", $0) },
                detail: "session does not meet the route's requirement: \(failure)"
                    + DistributedClaims.failures(in: session.claims, of: requirement.claimNames))
            if Pages.wantsHTML(request.exchange.head) {
                r = config.pages.forbiddenPage(
                    r, requestID: ctx.requestID, logoutAction: config.login.logoutPath,
                    csrfToken: login.settings.csrfToken(session))
            }
            request.answer(r)
            return
        }
        guard meetsStepUp(request, session, setCookies: setCookies) else { return }
        if !setCookies.isEmpty {
            ctx.response.added = setCookies.map { ("Set-Cookie", $0) }
            // A response that now carries a session cookie must never sit in a shared cache.
            ctx.response.dropped = ["Cache-Control", "Expires"]
            ctx.response.added.append(("Cache-Control", "private, no-store"))
        }
        ctx.response.ownCookies = config.ownCookieNames
        if ctx.kind.isUpgrade {
            var endsAt = login.absoluteEnd(of: session)
            // `max_age` (RFC 9470): a tunnel stands no longer than the authentication does.
            // Read with the issuer's leeway, as `meetsStepUp` reads it.
            if let fresh = loginRoute.sessionRequirement?.stepUpValidUntil(session.claims) {
                endsAt = min(endsAt, fresh + login.leeway(ofClient: session.client) + 1)
            }
            ctx.tunnel.session = (loginRoute, endsAt)
            if let issuer = vouchedBy { ctx.tunnel.caller = RevocationSubject(session: session, issuer: issuer) }
        }
        var identity = self.identity.headers(route, session.claims, ctx)
        UpstreamIdentity.appendPathParameterHeaders(route, ctx, to: &identity)
        guard let upstream = self.identity.sessionHeaders(route, session, identity, config: config) else {
            ctx.rejection = .unavailable(.tokenNotRefreshed)
            request.answer(
                ErrorResponse.make(
                    503, error: "temporarily_unavailable",
                    description: "the gateway cannot check sessions right now",
                    requestID: ctx.requestID, headers: [("Retry-After", "5")],
                    detail: "the session's access token expired and was not refreshed; not sent upstream"))
            return
        }
        let admission = Admission(identity: upstream.headers, session: true, body: nil, claims: session.claims)
        admission.upstreamProof = upstream.proof
        request.admission = admission
        request.resume()
    }

    private func noSession(_ request: RoutedRequest, cookies: Cookies, clear: [String]) {
        let ctx = request.context
        let navigation = Self.isNavigation(request.head)
        if navigation, let original = ctx.kind.original {
            DecisionLoginAnswer.answer(request, original: original, clear: clear)
        } else if navigation {
            // Capped: the pending login's return address rides in a cookie.
            var returnTo = request.path + (request.query.map { "?" + $0 } ?? "")
            if returnTo.utf8.count > 1024 { returnTo = "/" }
            if loginRoute.clients.count > 1 {
                // Several ways to sign in: the browser picks one (each link starts its login).
                var r = request.services.chooseClientPage(
                    loginRoute.clients, returnTo: returnTo, requestID: ctx.requestID)
                r.headers += clear.map { ("Set-Cookie", $0) }
                request.answer(r)
                return
            }
            LoginStart(login: login).begin(
                client: loginRoute.client, returnTo: returnTo, loginHint: nil,
                origin: request.services.origin(request.origin), cookies: cookies
            ) { response in
                var r = response
                r.headers += clear.map { ("Set-Cookie", $0) }
                request.answer(r)
            }
        } else {
            ctx.rejection = .refused(.loginRequired)
            metrics.authFailure(.loginRequired)
            request.answer(
                request.services.browserPage(
                    request.exchange, ctx, title: "Sign-in required",
                    ErrorResponse.make(
                        401, error: "login_required",
                        description: "sign in first (this route uses a browser session)",
                        requestID: ctx.requestID, headers: clear.map { ("Set-Cookie", $0) },
                        detail: "no session")))
        }
    }

    /// A page navigation (it may be redirected to a login); anything else — XHR, fetch, an
    /// API call, a form POST — gets 401 instead of a redirect it could not follow.
    static func isNavigation(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .GET || head.method == .HEAD else { return false }
        let h = head.fields
        // A gRPC or gRPC-Web call cannot follow a redirect: it gets UNAUTHENTICATED.
        if GRPCCall(h) != nil { return false }
        if h.first("X-Requested-With")?.lowercased() == "xmlhttprequest" { return false }
        if let mode = h.first("Sec-Fetch-Mode") { return mode == "navigate" }
        return h.first("Accept")?.contains("text/html") ?? false
    }
}
