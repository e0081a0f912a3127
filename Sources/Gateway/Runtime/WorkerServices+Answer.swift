import Foundation
import JOSE
import Reactor

/// The end of every request: the gateway's own answers, the access log line and the metrics.
extension WorkerServices {
    /// The one door for every answer the gateway writes itself: the response (through the
    /// exchange's responder, which answers exactly once and sends nothing to a client that
    /// is gone), then the access log line and the metrics. Streamed proxy answers end in
    /// `requestFinished` (see `ProxyExchange`).
    func answer(
        _ ex: ServerExchange, _ ctx: RequestContext, _ response: GatewayResponse, upstreamSeconds: Double = 0,
        close: Bool = false
    ) {
        if case .extAuthz(let check) = ctx.kind {
            ExtAuthzAnswer(services: self).answer(ex, ctx, response, judged: check)
            return
        }
        // A page with a problem (a login step that is unavailable) is JSON for a non-browser.
        let shaped =
            response.page != nil && response.problem != nil && !Pages.wantsHTML(ex.head)
            ? response.jsonForm(requestID: ctx.requestID) : response
        // A gRPC call's refusal is trailers-only: judged here, on a refusal's path only.
        let grpc = shaped.isGRPCRefusal && !ctx.kind.isDecision ? GRPCCall(ex.head.fields) : nil
        let response = grpc == nil ? config.pages.finish(shaped, requestID: ctx.requestID) : shaped
        let gone = !ex.responder.isConnected
        // Logged first: by the time a client holds the answer, its log line exists.
        // 499: client closed the request (nginx's convention, for logs and metrics only).
        // The log keeps the HTTP status the refusal stands for (a gRPC one is sent as 200).
        requestFinished(
            ctx, status: gone ? 499 : response.status, bytes: gone || grpc != nil ? 0 : response.body.utf8.count,
            upstreamSeconds: upstreamSeconds,
            detail: gone ? "client gone: " + (response.detail ?? "") : response.detail,
            reason: response.reason)
        if let grpc {
            response.sendGRPC(grpc, ex.responder, requestID: ctx.requestID, close: close || draining)
        } else {
            response.send(ex.responder, requestID: ctx.requestID, close: close || draining)
        }
    }

    /// `reason`: a stable code for why the gateway answered as it did (else the rejection's).
    func requestFinished(
        _ ctx: RequestContext, status: Int, bytes: Int, upstreamSeconds: Double, detail: String?, reason: String? = nil
    ) {
        let now = clock()
        let seconds = now - ctx.start
        metrics.record(routeID: ctx.routeID, status: status, seconds: seconds, at: now)
        if let trace = ctx.trace, let tracer {
            tracer.requestFinished(trace, ctx, status: status)
        }
        if let accessLog {
            let caller = ctx.caller
            let authorization = ctx.state[AuthorizationNote.Key.self]
            let mcpCall = ctx.mcpCall
            accessLog.record(
                AccessLogRecord(
                    requestID: ctx.requestID, method: ctx.method, path: ctx.path, route: ctx.route, status: status,
                    bytes: bytes, durationMicros: Int((seconds * 1e6).rounded()),
                    upstreamMicros: Int((upstreamSeconds * 1e6).rounded()), sub: caller?.subject,
                    clientID: caller?.clientID, issuer: caller?.issuer, apiKey: caller?.apiKey,
                    rejection: ctx.rejection?.code,
                    reason: reason ?? ctx.rejection?.reason?.code ?? ctx.state[RevocationNote.Key.self]?.reason,
                    detail: detail,
                    authz: authorization.map {
                        "\($0.authorizer):\($0.outcome.rawValue)\($0.cached ? ":cached" : "")"
                    },
                    authzMicros: authorization?.micros, pathParameters: ctx.pathParameters,
                    mcpMethod: mcpCall?.method, mcpName: mcpCall?.name))
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

    /// The login client choice page: one link per client to /oauth2/start?client=NAME&rd=RETURN.
    func chooseClientPage(_ clients: [String], returnTo: String, requestID: String) -> GatewayResponse {
        let start = config.login.startPath
        let body = config.pages.choosePage(
            clients: clients, href: { LoginService.url(start, [("client", $0), ("rd", returnTo)]) },
            requestID: requestID)
        return GatewayResponse(status: 200, body: body, detail: "login client choice")
    }
}
