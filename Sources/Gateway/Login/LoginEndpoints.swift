import OAuth
import Reactor

/// The gateway's own login endpoints (`/oauth2/start`, the callback, logout, back-channel
/// logout, the JWKS and hosted request objects): answered here, before any route.
struct LoginEndpoints {
    let services: WorkerServices

    func handle(
        _ ex: ServerExchange, _ endpoint: LoginEndpoint, query: String?, origin: RequestOrigin.Origin?,
        ctx: RequestContext
    ) {
        let login = services.authentication.login
        let services = services
        let cookies = Cookies(ex.head.fields)
        // What the built-in route's chain added to the answer (the RateLimit fields).
        let added = ctx.response.added
        let reply: (GatewayResponse) -> Void = { response in
            var r = response
            r.headers += added
            services.answer(ex, ctx, r)
        }
        let withBody = { (use: @escaping ([UInt8]) -> Void) in services.readOwnBody(ex, ctx, then: use) }
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
                    services.chooseClientPage(
                        names, returnTo: rd.flatMap(services.current.returnPolicy.check) ?? "/",
                        requestID: ctx.requestID))
                return
            }
            // An absolute `rd` on this request's own origin (a decision's login URL names the
            // original URL) is a same-origin path; other hosts need allowed_redirect_hosts.
            let returnTo = DecisionLogin.returnTarget(rd, origin: origin, policy: services.current.returnPolicy)
            let stepUp: AuthorizationRequirement?
            switch StepUpLogin.parse(params) {
            case .none: stepUp = nil
            case .stepUp(let asked): stepUp = asked
            case .invalid(let why):
                var r = GatewayResponse.page(
                    400, title: "Sign-in", message: "The sign-in link is not valid.", detail: "start: \(why)")
                r.problem = .init(error: "invalid_request", description: why)
                reply(r)
                return
            }
            login.beginLogin(
                client: client, returnTo: returnTo,
                loginHint: params.first { $0.0 == "login_hint" }?.1, origin: origin, cookies: cookies,
                stepUp: stepUp, done: reply)
        case .callback:
            guard method == .GET else {
                reply(.page(405, title: "Sign-in", message: "Method not allowed."))
                return
            }
            login.callback(query: Substring(query ?? ""), origin: origin, cookies: cookies, clock: services.clock) {
                response, timing in
                // The gateway's own time for the callback, the token endpoint's excluded.
                let own = services.clock() - ctx.start - timing.tokenEndpointSeconds
                services.metrics.recordCallback(ownSeconds: own)
                var r = services.config.session.sameSite == .strict ? response.strictSameSiteHop() : response
                r.detail = (response.detail ?? "") + " (own \(Int(own * 1e6)) us)"
                r.headers += added
                services.answer(ex, ctx, r, upstreamSeconds: timing.tokenEndpointSeconds)
            }
        case .backchannelLogout:
            guard method == .POST else {
                reply(GatewayResponse(status: 405, body: "", contentType: "text/plain"))
                return
            }
            withBody { body in login.backchannelLogout(body: body, done: reply) }
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
                login.logout(
                    method: method.rawValue, query: Substring(query ?? ""), form: form, cookies: cookies, done: reply)
            }
        }
    }
}
