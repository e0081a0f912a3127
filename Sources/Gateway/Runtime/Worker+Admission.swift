import JOSE
import Reactor

/// What the authentication stage hands on once a request may pass: the identity headers the
/// route maps, whether a browser session (not a client credential) authenticated it, the body
/// to send on (nil: the client's own stream), and what the identity came from.
struct Admission {
    var identity: [(String, String)]
    var session: Bool
    /// A form body already read, with its token removed (RFC 6750 §2.2); nil: the client's.
    var body: RequestBody?
    /// The token's or the session's claims.
    var claims: JSONObject
    /// A CORS preflight let through by `cors_preflight: allow`: forwarded with no credential.
    var preflight = false
}

/// The continuation of an admitted request: forward it (proxy mode) or answer the verdict
/// (decision mode, see `Worker+Decision`).
typealias Admitted = (RequestContext, Admission) -> Void

extension Worker {
    /// The authentication stage of a routed request, shared by proxied requests and decisions:
    /// the route's `auth` (none, session, or token with its DPoP checks), its `require`, and its
    /// identity headers. Refusals are answered here, the same for both modes; an admitted
    /// request goes to `allowed`.
    ///   - head: the request being judged (for a decision, the original request the ingress
    ///     described, not the subrequest's own line).
    ///   - readsBody: whether a form body may be read for a token (a decision has no body).
    ///   - navigation: how a page navigation without a session is answered; nil: the login
    ///     round trip starts here (proxy mode).
    func admit(
        _ ex: ServerExchange, head: HTTPRequestHead, plan: RoutePlan, path: String, query: String?,
        forwarded: ForwardedHeaders,
        ctx: RequestContext, readsBody: Bool = true, navigation: NavigationAnswer? = nil, allowed: @escaping Admitted
    ) {
        if let admission = admitAtOnce(head, plan: plan, path: path, ctx: ctx) {
            allowed(ctx, admission)
            return
        }
        let route = plan.route
        let tokenRoute: TokenRouteConfig
        switch route.auth {
        case .none:
            preconditionFailure("admitted at once")
        case .login(let loginRoute):
            authenticateSession(
                ex, head: head, route: route, loginRoute: loginRoute, path: path, query: query,
                origin: origin(forwarded), ctx: ctx, navigation: navigation, forward: allowed)
            return
        case .loginOrToken(let loginRoute, _) where Cookies(head.fields).values[login.settings.sessionCookie] != nil:
            // A session cookie: the session decides (a token beside it is not looked at).
            authenticateSession(
                ex, head: head, route: route, loginRoute: loginRoute, path: path, query: query,
                origin: origin(forwarded), ctx: ctx, navigation: navigation, forward: allowed)
            return
        case .tokens(let tokens), .loginOrToken(_, let tokens):
            tokenRoute = tokens
        }
        let target = TokenAuthenticator.Target(
            scheme: forwarded.forwardedProto, host: forwarded.forwardedHost ?? "",
            fromTrustedProxy: forwarded.originFromTrustedProxy, path: path)
        // RFC 6750 §2.2: only a route that accepts tokens in a form body reads the body
        // before deciding (bounded); every other route decides on the head alone.
        guard readsBody, tokenRoute.schemes.acceptsBearer, tokenRoute.tokenInBody,
            TokenAuthenticator.mayCarryFormToken(head)
        else {
            authenticateToken(
                ex, head: head, ctx: ctx, plan: plan, tokens: tokenRoute, target: target, query: query, form: nil,
                allowed: allowed)
            return
        }
        readOwnBody(ex, ctx) { [unowned self] bytes in
            let form = TokenAuthenticator.formTokens(bytes, keepToken: tokenRoute.forwardToken)
            self.authenticateToken(
                ex, head: head, ctx: ctx, plan: plan, tokens: tokenRoute, target: target, query: query, form: form,
                allowed: allowed)
        }
    }
}

extension Worker {
    /// Notes the route on the request's context, and admits the request if its head alone
    /// decides: a route with `auth: none`, or a CORS preflight that `cors_preflight: allow`
    /// lets through. nil: authentication must run (`admit`).
    func admitAtOnce(_ head: HTTPRequestHead, plan: RoutePlan, path: String, ctx: RequestContext) -> Admission? {
        let route = plan.route
        ctx.path = path
        ctx.route = route.name
        ctx.routeID = plan.metricID
        // cors_preflight: allow — a preflight carries no credentials (Fetch §3.2.2), so it
        // passes unauthenticated; any other OPTIONS is checked by `admit`.
        if route.options.corsPreflight && CORSPreflight.matches(head) {
            // As on the session path: the upstream's answer cannot set the gateway's cookies.
            if route.auth.loginRoute != nil { ctx.ownCookies = config.ownCookieNames }
            return Admission(identity: [], session: false, body: nil, claims: JSONObject(), preflight: true)
        }
        if case .none = route.auth { return Admission(identity: [], session: false, body: nil, claims: JSONObject()) }
        return nil
    }
}

extension RequestPipeline.Forwarding {
    /// The upstream request of an admitted request: the client's fields and forwarded
    /// headers, and its own body unless the admission replaced it (a form with its token
    /// removed).
    func request(_ admission: Admission, ex: ServerExchange, ctx: RequestContext) -> UpstreamCall.Request {
        request(
            headers: ex.head.fields, listsConnectionOptions: ex.head.listsConnectionOptions,
            forwarded: ctx.forwarded, identity: admission.identity,
            session: admission.session, preflight: admission.preflight, body: admission.body ?? ex.body)
    }
}

/// How a decision answers a page navigation that has no session: the request context, and
/// the session cookies to clear.
typealias NavigationAnswer = (RequestContext, [String]) -> Void
