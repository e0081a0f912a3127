import Logging
import Reactor

/// Decision mode: an ingress that proxies itself asks tokengate about a request, and
/// tokengate answers the verdict its route gives — the proxied request's routing and
/// authentication stage, with the verdict written instead of the upstream call. Nothing
/// goes upstream; the token and session caches serve decisions as they serve proxied
/// requests; a DPoP proof is claimed once per decision (in the authentication stage, last).
extension Worker {
    enum DecisionKind {
        /// `decision.path`: nginx `auth_request`, ingress-nginx.
        case nginx
        /// `decision.forward_auth_path`: Traefik `forwardAuth`, Caddy `forward_auth`.
        case forwardAuth
        /// Envoy's HTTP ext_authz: the original request-target after the prefix.
        case extAuthz(target: String)

        var style: DecisionRequest.Style {
            switch self {
            case .nginx: return .nginx
            case .forwardAuth: return .forwardAuth
            case .extAuthz: return .envoy
            }
        }
    }

    /// Whether `target` (as received, not normalized: only the exact path is an endpoint)
    /// names a decision endpoint, and which ingress convention it speaks.
    func decisionKind(_ target: String) -> DecisionKind? {
        guard decisionEnabled else { return nil }
        let d = config.decision
        let path = target.firstIndex(of: "?").map { target[..<$0] } ?? Substring(target)
        if let p = d.path, path == p { return .nginx }
        if let p = d.forwardAuthPath, path == p { return .forwardAuth }
        if let prefix = d.extAuthzPrefix, target.hasPrefix(prefix), target.utf8.count > prefix.utf8.count,
            target.utf8[target.utf8.index(target.utf8.startIndex, offsetBy: prefix.utf8.count)] == UInt8(ascii: "/")
        {
            return .extAuthz(target: String(target.dropFirst(prefix.count)))
        }
        return nil
    }

    func decide(
        _ ex: ServerExchange, _ kind: DecisionKind, forwarded: ForwardedHeaders, trusted: Bool, ctx: RequestContext
    ) {
        ctx.isVerdict = true
        var envoyTarget: String?
        if case .extAuthz(let t) = kind { envoyTarget = t }
        let original: DecisionRequest
        switch DecisionRequest.read(
            ex.head, style: kind.style, extAuthzTarget: envoyTarget,
            connectionScheme: ex.connection.isTLS ? "https" : "http",
            peer: ex.connection.peer, peerTrusted: trusted, secret: config.decision.secret)
        {
        case .failure(let problem):
            ctx.path = String(ex.head.target.prefix(256))
            ctx.route = "decision"
            log.warning(
                "decision refused",
                metadata: [
                    "request_id": .string(ctx.requestID), "peer": .string(ex.connection.peer),
                    "reason": .string(problem.detail)
                ])
            answer(
                ex, ctx,
                ErrorResponse.make(
                    400, error: "invalid_request", description: problem.description, requestID: ctx.requestID,
                    detail: problem.detail))
            return
        case .success(let r): original = r
        }
        let head = original.head(from: ex.head)
        ctx.method = original.method
        let settings = config.decision
        judge(ex, original, head: head, forwarded: forwarded, ctx: ctx) { [unowned self] ctx, admitted, plan, _ in
            let token = DecisionVerdict.forwardedToken(route: plan.route, admission: admitted, head: head)
            var admission = admitted
            admission.identity = admitted.verdictIdentity(
                method: original.method, scheme: original.scheme, host: original.host, target: original.target)
            self.answer(
                ex, ctx,
                DecisionVerdict.allowed(
                    status: settings.allowStatus, admission: admission, accessToken: token,
                    upstreamCookie: DecisionVerdict.upstreamCookie(head, own: self.config.ownCookieNames),
                    responseHeaders: ctx.responseHeaders))
        }
    }

    /// An admitted decision: the request's context and admission, its route, and how a
    /// proxied request would have gone on (which of the client's fields it keeps).
    typealias DecisionAllowed = (RequestContext, Admission, RoutePlan, RequestPipeline.Forwarding) -> Void

    /// The stages every decision shares, whatever form the ingress asked in: the original
    /// request (`head`: its method, target, credentials and Host) through the same
    /// normalizer, router and authentication stage as a proxied request, the verdict
    /// instead of the upstream call. Refusals are answered here (`answer`); an admitted
    /// request goes to `allowed`.
    ///   - forwarded: what the ingress says of the client; the original origin is set here.
    func judge(
        _ ex: ServerExchange, _ original: DecisionRequest, head: HTTPRequestHead, forwarded: ForwardedHeaders,
        ctx: RequestContext, allowed: @escaping DecisionAllowed
    ) {
        // The original origin, as a trusted proxy's X-Forwarded-Proto/-Host would say it: what
        // a DPoP proof's htu names (RFC 9449 §4.3) and where a login comes back to.
        var origin = forwarded
        origin.forwardedProto = original.scheme
        origin.forwardedHost = original.host
        origin.originFromTrustedProxy = true
        let outcome = RequestPipeline.prepare(head, peerTrusted: true, policy: requestPolicy)
        switch outcome {
        case .reject(let status, let error, let description):
            // The same refusal a proxied request would get (path confusion, no route).
            ctx.path = String(original.target.prefix(256))
            answer(
                ex, ctx, ErrorResponse.make(status, error: error, description: description, requestID: ctx.requestID))
        case .login(_, let path, _), .protectedResourceMetadata(_, let path):
            // The gateway's own login endpoints and Protected Resource Metadata (RFC 9728) are
            // public: the ingress may send them on — but only as themselves. A target that
            // merely normalizes to one (`/admin/%2e%2e/oauth2/start`) never met the router's
            // escape check, and the ingress sends its raw path upstream.
            ctx.path = path
            let login: Bool
            if case .login = outcome { login = true } else { login = false }
            ctx.route = login ? "login" : ProtectedResourceDocument.logRoute
            let what = login ? "login endpoint" : "protected resource metadata"
            let raw = original.target.firstIndex(of: "?").map { String(original.target[..<$0]) } ?? original.target
            guard raw == path else {
                log.warning(
                    "decision refused",
                    metadata: [
                        "request_id": .string(ctx.requestID),
                        "reason": .string("\(what) reached through \(raw.prefix(200))")
                    ])
                answer(
                    ex, ctx,
                    ErrorResponse.make(
                        400, error: "invalid_request",
                        description:
                            "a \(what) is allowed only under its own path, without dot-segments or encodings",
                        requestID: ctx.requestID, detail: "decision: \(what) reached through another path"))
                return
            }
            answer(
                ex, ctx,
                GatewayResponse(
                    status: config.decision.allowStatus, body: "", contentType: "text/plain",
                    detail: "decision: \(what)"))
        case .forward(let plan, let path, let query, let build):
            let settings = config.decision
            let navigation: NavigationAnswer = { [unowned self] ctx, clear in
                self.answerLogin(ex, ctx, original: original, head: head, clear: clear, settings: settings)
            }
            admit(
                ex, head: head, plan: plan, path: path, query: query, forwarded: origin, ctx: ctx, readsBody: false,
                navigation: navigation
            ) { [unowned self] ctx, admission in
                if let refusal = self.mcpDecisionRefusal(plan.route, head: head, ctx: ctx) {
                    self.answer(ex, ctx, refusal)
                    return
                }
                allowed(ctx, admission, plan, build)
            }
        }
    }

    /// A page navigation without a session on a login route: nginx gets 401 and the login URL
    /// in a header (its `error_page 401 =` sends the browser there); Traefik, Caddy and Envoy,
    /// which hand the verdict to the client, get the 302 itself. A gRPC call is never sent
    /// to a login page: it gets the 401.
    private func answerLogin(
        _ ex: ServerExchange, _ ctx: RequestContext, original: DecisionRequest, head: HTTPRequestHead,
        clear: [String], settings: DecisionConfig
    ) {
        ctx.rejection = .refused(.loginRequired)
        metrics.authFailure(.loginRequired)
        let url = DecisionVerdict.loginURL(original, startPath: config.login.startPath)
        var redirect: Bool
        switch settings.loginResponse {
        case .auto: redirect = original.style != .nginx
        case .redirect: redirect = true
        case .unauthorized: redirect = false
        }
        if GRPCCall(head.fields) != nil { redirect = false }
        if redirect {
            answer(ex, ctx, .redirect(url, cookies: clear, detail: "decision: login"))
        } else {
            answer(
                ex, ctx,
                ErrorResponse.make(
                    401, error: "login_required", description: "sign in first (this route uses a browser session)",
                    requestID: ctx.requestID,
                    headers: [(DecisionVerdict.loginURLHeader, url)] + clear.map { ("Set-Cookie", $0) },
                    detail: "decision: no session"))
        }
    }
}
