import Logging
import OAuth
import Reactor

/// Decision mode: an ingress that proxies itself asks tokengate about a request, and
/// tokengate answers the verdict its route gives — the proxied request's routing and
/// authentication stage, with the verdict written instead of the upstream call. Nothing
/// goes upstream; the token and session caches serve decisions as they serve proxied
/// requests; a DPoP proof is claimed once per decision (in the authentication stage, last).
struct DecisionEndpoint {
    let services: WorkerServices
    /// The route plans' last stage for decisions of this kind.
    let verdict: any Stage

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
    static func kind(_ target: String, _ d: DecisionConfig) -> DecisionKind? {
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
        ctx.kind = .decisionCall
        let config = services.config
        var envoyTarget: String?
        if case .extAuthz(let t) = kind { envoyTarget = t }
        let original: DecisionRequest
        switch DecisionRequest.read(
            ex.head, style: kind.style, extAuthzTarget: envoyTarget,
            connectionScheme: ex.connection.isTLS ? "https" : "http",
            peer: ex.connection.peer, peerTrusted: trusted, secret: config.decision.secret)
        {
        case .failure(let problem):
            ctx.place(path: String(ex.head.target.prefix(256)), route: "decision")
            services.log.warning(
                "decision refused",
                metadata: [
                    "request_id": .string(ctx.requestID), "peer": .string(ex.connection.peer),
                    "reason": .string(problem.detail)
                ])
            services.answer(
                ex, ctx,
                ErrorResponse.make(
                    400, error: "invalid_request", description: problem.description, requestID: ctx.requestID,
                    detail: problem.detail))
            return
        case .success(let r): original = r
        }
        ctx.kind = .verdict(original)
        judge(ex, original, head: original.head(from: ex.head), forwarded: forwarded, ctx: ctx)
    }

    /// The stages every decision shares, whatever form the ingress asked in: the original
    /// request (`head`: its method, target, credentials and Host) through the same
    /// normalizer, router and authentication stage as a proxied request, the verdict
    /// instead of the upstream call. Refusals are answered here (`answer`); an admitted
    /// request goes to `allowed`.
    ///   - forwarded: what the ingress says of the client; the original origin is set here.
    func judge(
        _ ex: ServerExchange, _ original: DecisionRequest, head: HTTPRequestHead, forwarded: ForwardedHeaders,
        ctx: RequestContext
    ) {
        let config = services.config
        // The original origin, as a trusted proxy's X-Forwarded-Proto/-Host would say it: what
        // a DPoP proof's htu names (RFC 9449 §4.3) and where a login comes back to.
        var origin = forwarded
        origin.forwardedProto = original.scheme
        origin.forwardedHost = original.host
        origin.originFromTrustedProxy = true
        let outcome = RouteResolver.prepare(head, peerTrusted: true, policy: services.requestPolicy)
        switch outcome {
        case .reject(let status, let error, let description):
            // The same refusal a proxied request would get (path confusion, no route).
            ctx.place(path: String(original.target.prefix(256)), method: original.method)
            services.answer(
                ex, ctx, ErrorResponse.make(status, error: error, description: description, requestID: ctx.requestID))
        case .ownEndpoint(let endpoint, let path, _, _):
            // The gateway's own login endpoints and Protected Resource Metadata (RFC 9728) are
            // public: the ingress may send them on — but only as themselves. A target that
            // merely normalizes to one (`/admin/%2e%2e/oauth2/start`) never met the router's
            // escape check, and the ingress sends its raw path upstream.
            let login: Bool
            if case .login = endpoint { login = true } else { login = false }
            ctx.place(path: path, route: endpoint.logRoute, method: original.method)
            let what = login ? "login endpoint" : "protected resource metadata"
            let raw = original.target.firstIndex(of: "?").map { String(original.target[..<$0]) } ?? original.target
            guard raw == path else {
                services.log.warning(
                    "decision refused",
                    metadata: [
                        "request_id": .string(ctx.requestID),
                        "reason": .string("\(what) reached through \(raw.prefix(200))")
                    ])
                services.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        400, error: "invalid_request",
                        description:
                            "a \(what) is allowed only under its own path, without dot-segments or encodings",
                        requestID: ctx.requestID, detail: "decision: \(what) reached through another path"))
                return
            }
            services.answer(
                ex, ctx,
                GatewayResponse(
                    status: config.decision.allowStatus, body: "", contentType: "text/plain",
                    detail: "decision: \(what)"))
        case .forward(let plan, let path, let query, let build):
            ctx.place(
                path: path, route: plan.name, routeID: plan.metricID, method: original.method,
                parameters: plan.parameters(in: path))
            RoutedRequest(
                exchange: ex, context: ctx, judging: head, origin: origin, path: path, query: query,
                forwarding: build, services: services, last: verdict
            ).resume()
        }
    }
}

/// A page navigation without a session on a login route: nginx gets 401 and the login URL
/// in a header (its `error_page 401 =` sends the browser there); Traefik, Caddy and Envoy,
/// which hand the verdict to the client, get the 302 itself. A gRPC call is never sent
/// to a login page: it gets the 401.
enum DecisionLoginAnswer {
    /// `stepUp`: the session's client and the route's `acr` / `max_age` it did not meet.
    static func answer(
        _ request: RoutedRequest, original: DecisionRequest, clear: [String],
        stepUp: (client: String, asked: AuthorizationRequirement)? = nil
    ) {
        let services = request.services
        let config = services.config
        let settings = config.decision
        let ctx = request.context
        let head = request.head
        ctx.rejection = .refused(.loginRequired)
        services.metrics.authFailure(.loginRequired)
        let url = DecisionVerdict.loginURL(original, startPath: config.login.startPath, stepUp: stepUp)
        var redirect: Bool
        switch settings.loginResponse {
        case .auto: redirect = original.style != .nginx
        case .redirect: redirect = true
        case .unauthorized: redirect = false
        }
        if GRPCCall(head.fields) != nil { redirect = false }
        if redirect {
            request.answer(
                .redirect(url, cookies: clear, detail: stepUp == nil ? "decision: login" : "decision: step-up login"))
        } else {
            request.answer(
                ErrorResponse.make(
                    401, error: "login_required", description: "sign in first (this route uses a browser session)",
                    requestID: ctx.requestID,
                    headers: [(DecisionVerdict.loginURLHeader, url)] + clear.map { ("Set-Cookie", $0) },
                    detail: stepUp == nil ? "decision: no session" : "decision: step-up login"))
        }
    }
}
