import JOSE
import OAuth
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
    /// The access token that admitted the request, and the scheme it came with (`Bearer`,
    /// `DPoP`): what an MCP call's rules are checked against and how a refusal is shaped.
    var token: VerifiedAccessToken? = nil
    var tokenScheme = "Bearer"
    /// That token as the client presented it: what a `token_exchange` route trades.
    var presentedToken: String? = nil
    /// A DPoP-bound token the gateway sends upstream (got by exchange, or the session's): the
    /// upstream request carries a proof.
    var upstreamProof: UpstreamProof? = nil
    /// The connection's memo of this token's admission (`BearerMemo`), where one stands.
    var bearerMemo: BearerMemo? = nil
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
    ///   - triedAtOnce: the caller already found that `admitAtOnce` does not decide.
    func admit(
        _ ex: ServerExchange, head: HTTPRequestHead, plan: RoutePlan, path: String, query: String?,
        forwarded: ForwardedHeaders,
        ctx: RequestContext, readsBody: Bool = true, navigation: NavigationAnswer? = nil, triedAtOnce: Bool = false,
        allowed: @escaping Admitted
    ) {
        if !triedAtOnce,
            let admission = admitAtOnce(ex, head, plan: plan, path: path, query: query, ctx: ctx, readsBody: readsBody)
        {
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
            fromTrustedProxy: forwarded.originFromTrustedProxy, path: path,
            certificate: ctx.isVerdict ? nil : ex.connection.clientCertificate)
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
    /// decides: a route with `auth: none`, a CORS preflight that `cors_preflight: allow`
    /// lets through, or the Bearer token this connection was admitted with on this route
    /// before (`BearerMemo`). nil: authentication must run (`admit`).
    func admitAtOnce(
        _ ex: ServerExchange, _ head: HTTPRequestHead, plan: RoutePlan, path: String, query: String?,
        ctx: RequestContext, readsBody: Bool = true
    ) -> Admission? {
        let route = plan.route
        ctx.path = path
        ctx.route = route.name
        ctx.routeID = plan.metricID
        ctx.buffersResponse = route.options.buffering
        ctx.buffersRequest = route.options.requestBuffering
        // cors_preflight: allow — a preflight carries no credentials (Fetch §3.2.2), so it
        // passes unauthenticated; any other OPTIONS is checked by `admit`.
        if route.options.corsPreflight && CORSPreflight.matches(head) {
            // As on the session path: the upstream's answer cannot set the gateway's cookies.
            if route.auth.loginRoute != nil { ctx.ownCookies = config.ownCookieNames }
            return Admission(identity: [], session: false, body: nil, claims: JSONObject(), preflight: true)
        }
        switch route.auth {
        case .none:
            return Admission(identity: [], session: false, body: nil, claims: JSONObject())
        case .tokens(let tokens):
            return admitRemembered(ex, head, plan: plan, tokens: tokens, query: query, ctx: ctx, readsBody: readsBody)
        case .login, .loginOrToken:
            return nil
        }
    }

    /// The admission of the Bearer token this connection was admitted with on this route,
    /// if the request carries the same one the same way (see `BearerMemo` for when that
    /// stands for the full check).
    private func admitRemembered(
        _ ex: ServerExchange, _ head: HTTPRequestHead, plan: RoutePlan, tokens: TokenRouteConfig, query: String?,
        ctx: RequestContext, readsBody: Bool
    ) -> Admission? {
        guard let connection = ex.connection.context,
            let memo = unsafeDowncast(connection, to: ConnectionMemo.self).bearer,
            memo.routeIndex == plan.route.index, memo.generation == self.tokens.generation,
            self.tokens.wallClock.seconds < memo.validUntil, tokens.schemes.acceptsBearer,
            memo.matches(head.fields, query: query)
        else { return nil }
        // A form body may carry a token too (RFC 6750 §2.2): then the full path decides.
        if readsBody && tokens.tokenInBody && TokenAuthenticator.mayCarryFormToken(head) { return nil }
        let token = memo.caller.token
        // A certificate-bound token was admitted on a proxied request over this connection's
        // certificate; a decision on the same connection judges another client's request, for
        // which that certificate proves nothing (the full path refuses it).
        if ctx.isVerdict && token.isSenderConstrained { return nil }
        ctx.subject = memo.subject
        ctx.clientID = memo.clientID
        ctx.issuer = token.issuer
        if ctx.upgrade && tokens.closeAtTokenExpiry { ctx.tunnelTokenExpiry = token.expiresAt }
        if tokens.dpop != nil { ctx.droppedResponseHeaders = ["DPoP-Nonce"] }
        var identity = memo.identity
        if let a = tokenAssertion(plan.route, token) { identity.append(a) }
        return Admission(
            identity: identity, session: false, body: nil, claims: token.claims, token: token,
            presentedToken: memo.caller.fromAuthorization, bearerMemo: memo)
    }

    /// Keeps a Bearer admission for the connection's next requests, when it may stand for
    /// them (`BearerMemo`): the token came alone in the Authorization field, and the
    /// verified-token cache holds it.
    @discardableResult
    func rememberBearer(
        _ ex: ServerExchange, _ head: HTTPRequestHead, caller: AuthenticatedCaller, plan: RoutePlan,
        ctx: RequestContext, identity: [(String, String)]
    ) -> BearerMemo? {
        guard caller.jkt == nil, caller.responseHeaders.isEmpty, let token = caller.fromAuthorization,
            let until = tokens.trustedUntil(token)
        else { return nil }
        var authorization: [UInt8]?
        head.fields.forEachValue(named: "Authorization") { authorization = Array($0) }
        guard let authorization else { return nil }
        let bearer = BearerMemo(
            authorization: authorization, routeIndex: plan.route.index, generation: tokens.generation,
            validUntil: until, caller: caller, identity: identity, subject: ctx.subject, clientID: ctx.clientID)
        memo(ex.connection).bearer = bearer
        return bearer
    }
}

extension RequestPipeline.Forwarding {
    /// The upstream request of an admitted request: the client's fields and forwarded
    /// headers, and its own body unless the admission replaced it (a form with its token
    /// removed).
    func request(_ admission: Admission, ex: ServerExchange, ctx: RequestContext) -> UpstreamCall.Request {
        var identity = admission.identity
        if !plan.certificateHeaders.isEmpty, let certificate = ex.connection.clientCertificate {
            for (header, field) in plan.certificateHeaders {
                if let value = field.value(of: certificate) { identity.append((header, value)) }
            }
        }
        if let upstreamProof = admission.upstreamProof {
            let scheme = plan.upstream?.tls == nil ? "http" : "https"
            // htu names the URL the upstream sees: its Host header (host_header may make that the
            // client's or a fixed name); nonces are kept per upstream authority.
            if let proof = upstreamProof.proof(
                method: ex.head.methodName, scheme: scheme, host: upstreamHost, nonceKey: plan.upstreamAuthority,
                target: target)
            {
                identity.append(("DPoP", proof))
            }
            if ctx.upstreamDPoP == nil {
                // The first try: the upstream's nonces are the gateway's to answer, and a
                // request without a body may go once more with one (RFC 9449 §8, §9).
                ctx.droppedResponseHeaders.append("DPoP-Nonce")
                let retry: (() -> UpstreamCall.Request)?
                // Not an upgrade: its second try would need the upgrade's own request again.
                if !ctx.upgrade, UpstreamDPoPExchange.mayRetry(ex.head, body: admission.body ?? ex.body) {
                    retry = { [self, unowned ex, unowned ctx] in self.request(admission, ex: ex, ctx: ctx) }
                } else {
                    retry = nil
                }
                ctx.upstreamDPoP = UpstreamDPoPExchange(
                    nonces: upstreamProof.nonces, authority: plan.upstreamAuthority, retry: retry)
            }
        }
        return request(
            headers: ex.head.fields, listsConnectionOptions: ex.head.listsConnectionOptions,
            forwarded: ctx.forwarded, identity: identity,
            session: admission.session, preflight: admission.preflight, body: admission.body ?? ex.body,
            trace: ctx.trace, dropTraceContext: ctx.dropClientTraceContext)
    }
}

/// How a decision answers a page navigation that has no session: the request context, and
/// the session cookies to clear.
typealias NavigationAnswer = (RequestContext, [String]) -> Void
