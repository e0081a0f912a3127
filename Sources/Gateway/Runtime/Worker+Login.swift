import OAuth
import Reactor

/// The browser side of a worker: the login endpoints, and `login` / `login_or_token` routes
/// (session, or a login round-trip for page navigations, or 401 for everything else).
extension Worker {
    func handleLoginEndpoint(
        _ ex: ServerExchange, _ endpoint: LoginEndpoint, query: String?, origin: RequestOrigin.Origin?,
        ctx: RequestContext
    ) {
        let cookies = Cookies(ex.head.fields)
        ctx.route = "login"
        let reply: (GatewayResponse) -> Void = { [unowned self] response in self.answer(ex, ctx, response) }
        let withBody = { (use: @escaping ([UInt8]) -> Void) in self.readOwnBody(ex, ctx, then: use) }
        let method = ex.head.method ?? .GET
        switch endpoint {
        case .jwks:
            reply(login.jwks())
        case .requestObject(let id):
            login.requestObject(id: id, done: reply)
        case .start:
            let params = query.flatMap { FormEncoding.decode(Substring($0)) } ?? []
            let rd = params.first { $0.0 == "rd" }?.1
            let client: String
            switch login.chooseClient(named: params.first { $0.0 == "client" }?.1) {
            case .client(let name): client = name
            case .refused(let response):
                reply(response)
                return
            case .choose(let names):
                reply(
                    chooseClientPage(names, returnTo: rd.flatMap(returnPolicy.check) ?? "/", requestID: ctx.requestID))
                return
            }
            // An absolute `rd` on this request's own origin (a decision's login URL names the
            // original URL) is a same-origin path; other hosts need allowed_redirect_hosts.
            let returnTo = DecisionLogin.returnTarget(rd, origin: origin, policy: returnPolicy)
            login.beginLogin(
                client: client, returnTo: returnTo,
                loginHint: params.first { $0.0 == "login_hint" }?.1, origin: origin, cookies: cookies, done: reply)
        case .callback:
            guard method == .GET else {
                reply(.page(405, title: "Sign-in", message: "Method not allowed."))
                return
            }
            login.callback(query: Substring(query ?? ""), origin: origin, cookies: cookies, clock: clock) {
                [unowned self] response, timing in
                // The gateway's own time for the callback, the token endpoint's excluded.
                let own = self.clock() - ctx.start - timing.tokenEndpointSeconds
                self.metrics.recordCallback(ownSeconds: own)
                var r = self.config.session.sameSite == .strict ? response.strictSameSiteHop() : response
                r.detail = (response.detail ?? "") + " (own \(Int(own * 1e6)) us)"
                self.answer(ex, ctx, r, upstreamSeconds: timing.tokenEndpointSeconds)
            }
        case .backchannelLogout:
            guard method == .POST else {
                reply(GatewayResponse(status: 405, body: "", contentType: "text/plain"))
                return
            }
            withBody { body in self.login.backchannelLogout(body: body, done: reply) }
        case .logout:
            guard method == .GET || method == .POST else {
                reply(.page(405, title: "Log out", message: "Method not allowed."))
                return
            }
            guard method == .POST else {
                login.logout(
                    method: method.rawValue, query: Substring(query ?? ""), form: [], cookies: cookies, done: reply)
                return
            }
            withBody { body in
                let form = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))) ?? []
                self.login.logout(
                    method: method.rawValue, query: Substring(query ?? ""), form: form, cookies: cookies, done: reply)
            }
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

    /// `auth: login` (and `login_or_token` with a session cookie); `loginRoute`: the route's
    /// session settings.
    func authenticateSession(
        _ ex: ServerExchange, head: HTTPRequestHead, route: RouteConfig, loginRoute: LoginRouteConfig, path: String,
        query: String?, origin: RequestOrigin.Origin?, ctx: RequestContext, navigation: NavigationAnswer? = nil,
        forward: @escaping Admitted
    ) {
        let cookies = Cookies(head.fields)
        login.authenticate(route: loginRoute, cookies: cookies) { [unowned self] decision in
            switch decision {
            case .allow(let session, let setCookies):
                ctx.subject = session.subject
                ctx.clientID = session.client
                // require.issuers / require.clients: who vouched for the session (finding 6).
                let vouchedBy = self.config.clients[session.client]?.issuer
                if let requirement = loginRoute.sessionRequirement,
                    let failure = requirement.check(session.claims, issuer: vouchedBy, client: session.client)
                {
                    ctx.rejection = .refused(.insufficientScope)
                    self.metrics.authFailure(.insufficientScope)
                    var r = ErrorResponse.make(
                        403, error: "insufficient_scope", description: "this account may not use this resource",
                        requestID: ctx.requestID, headers: setCookies.map { ("Set-Cookie", $0) },
                        detail: "session does not meet the route's requirement: \(failure)")
                    if Pages.wantsHTML(ex.head) {
                        r = self.config.pages.forbiddenPage(
                            r, requestID: ctx.requestID, logoutAction: self.config.login.logoutPath,
                            csrfToken: self.login.settings.csrfToken(session))
                    }
                    self.answer(ex, ctx, r)
                    return
                }
                if !setCookies.isEmpty {
                    ctx.responseHeaders = setCookies.map { ("Set-Cookie", $0) }
                    // A response that now carries a session cookie must never sit in a shared cache.
                    ctx.droppedResponseHeaders = ["Cache-Control", "Expires"]
                    ctx.responseHeaders.append(("Cache-Control", "private, no-store"))
                }
                ctx.ownCookies = self.config.ownCookieNames
                if ctx.upgrade { ctx.tunnelSession = (loginRoute, self.login.absoluteEnd(of: session)) }
                guard
                    let upstream = self.sessionUpstreamHeaders(
                        route, session, self.identityHeaders(route, session.claims, ctx))
                else {
                    ctx.rejection = .unavailable(.tokenNotRefreshed)
                    self.answer(
                        ex, ctx,
                        ErrorResponse.make(
                            503, error: "temporarily_unavailable",
                            description: "the gateway cannot check sessions right now",
                            requestID: ctx.requestID, headers: [("Retry-After", "5")],
                            detail: "the session's access token expired and was not refreshed; not sent upstream"))
                    return
                }
                var admission = Admission(
                    identity: upstream.headers, session: true, body: nil, claims: session.claims)
                admission.upstreamProof = upstream.proof
                forward(ctx, admission)
            case .unavailable(let reason, let why):
                ctx.rejection = .unavailable(reason)
                self.answer(
                    ex, ctx,
                    self.browserPage(
                        ex, ctx, title: "Temporarily unavailable",
                        ErrorResponse.make(
                            503, error: "temporarily_unavailable",
                            description: "the gateway cannot check sessions right now",
                            requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: why)))
            case .none(let clear):
                if Worker.isNavigation(head), let navigation {
                    navigation(ctx, clear)
                } else if Worker.isNavigation(head) {
                    // Capped: the pending login's return address rides in a cookie.
                    var returnTo = path + (query.map { "?" + $0 } ?? "")
                    if returnTo.utf8.count > 1024 { returnTo = "/" }
                    if loginRoute.clients.count > 1 {
                        // Several ways to sign in: the browser picks one (each link starts its login).
                        var r = self.chooseClientPage(loginRoute.clients, returnTo: returnTo, requestID: ctx.requestID)
                        r.headers += clear.map { ("Set-Cookie", $0) }
                        self.answer(ex, ctx, r)
                        return
                    }
                    self.login.beginLogin(
                        client: loginRoute.client, returnTo: returnTo, loginHint: nil, origin: origin, cookies: cookies
                    ) { response in
                        var r = response
                        r.headers += clear.map { ("Set-Cookie", $0) }
                        self.answer(ex, ctx, r)
                    }
                } else {
                    ctx.rejection = .refused(.loginRequired)
                    self.metrics.authFailure(.loginRequired)
                    self.answer(
                        ex, ctx,
                        self.browserPage(
                            ex, ctx, title: "Sign-in required",
                            ErrorResponse.make(
                                401, error: "login_required",
                                description: "sign in first (this route uses a browser session)",
                                requestID: ctx.requestID, headers: clear.map { ("Set-Cookie", $0) },
                                detail: "no session")))
                }
            }
        }
    }

    /// A JSON error as the error page when a browser will show it (`Pages.wantsHTML`).
    func browserPage(_ ex: ServerExchange, _ ctx: RequestContext, title: String, _ json: GatewayResponse)
        -> GatewayResponse
    {
        guard Pages.wantsHTML(ex.head) else { return json }
        // A 503 offers the same page again; only an origin-form target (RFC 9112 §3.2.1) is a
        // link on this origin ("//x" and "/\\x" are another host to a browser: WHATWG URL).
        let target = ex.head.target
        let retry =
            json.status == 503 && target.hasPrefix("/") && !target.hasPrefix("//") && !target.hasPrefix("/\\")
            ? PageLink(text: "Try again", href: target) : nil
        return config.pages.errorPage(json, title: title, requestID: ctx.requestID, link: retry)
    }
}
