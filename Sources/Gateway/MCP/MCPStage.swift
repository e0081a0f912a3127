import JOSE
import OAuth
import Reactor

/// An MCP route's stage after authentication: the JSON-RPC message in a POST's body is read
/// and judged by the route's `mcp` rules before anything is forwarded. GET (the server's SSE
/// stream) and DELETE (the end of a session) carry no call and pass on the route's
/// requirement alone, if they carry no content; any other method is refused
/// (MCPTransportMethods), so no call reaches the server unjudged in another method's body.
/// A CORS preflight let through ahead of authentication (`cors_preflight: allow`) passes.
/// `Mcp-Session-Id` goes through as any field does.
final class MCPStage: ModuleStage {
    /// After the route's limits and its policy decision (for a route that is not MCP's).
    static let position = StagePosition.afterAuthentication

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> MCPStage? {
        plan.mcp.map {
            MCPStage(
                calls: services.modules[MCPModule.self], metrics: services.metrics,
                points: plan.route.options.settings.has(AuthorizeStage.Settings.self) ? services.policies : nil,
                publicURLs: services.config.publicURLs, rules: $0, plan: plan)
        }
    }

    /// A decision's chain judges the call the same way, with nothing to forward after it.
    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition, decision: Bool)
        -> (any Stage)?
    {
        let stage = make(plan, services)
        return decision ? stage.map(MCPDecisionStage.init(judge:)) : stage
    }

    /// This worker's count of calls (the module's service), its metrics, and on a route with
    /// `authorize` its PDP clients. Unowned: the services hold them and the plans that hold
    /// their stages.
    unowned(unsafe) let calls: MCPCalls
    unowned(unsafe) let metrics: WorkerMetrics
    unowned(unsafe) let points: PolicyDecisionPoints?
    let rules: MCPRules
    let route: RouteConfig
    let refusals: AuthRefusals?

    let origin: MCPOrigin

    init(
        calls: MCPCalls, metrics: WorkerMetrics, points: PolicyDecisionPoints?, publicURLs: [PublicURL],
        rules: MCPRules,
        plan: RoutePlan
    ) {
        self.calls = calls
        self.metrics = metrics
        self.points = points
        self.rules = rules
        route = plan.route
        refusals = plan.tokens?.refusals
        origin = MCPOrigin(
            route: plan.route, publicURLs: publicURLs, allowedOrigins: rules.allowedOrigins)
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let admission = request.admitted
        let ex = request.exchange
        let ctx = request.context
        if let refusal = originRefusal(request) {
            return .answer(refusal, close: MCPTransportMethods.hasContent(ex.body.framing))
        }
        if admission.preflight { return .proceed }
        guard ex.head.method == .POST else {
            let hasContent = MCPTransportMethods.hasContent(ex.body.framing)
            if !MCPProtocolVersion.servesSessions(rules.protocolVersions) {
                // MCP 2026-07-28 has no session: no GET stream, no DELETE; every message is a POST.
                return .answer(
                    ErrorResponse.make(
                        405, error: "invalid_request", description: "this MCP endpoint takes POST only",
                        requestID: ctx.requestID, headers: [("Allow", "POST")],
                        detail: "mcp: \(ex.head.methodName) on a 2026-07-28 route"), close: hasContent)
            }
            if let refusal = MCPTransportMethods.refusal(ex.head, hasContent: hasContent, requestID: ctx.requestID) {
                // A body left unread: the connection is not kept for a next request.
                return .answer(refusal, close: hasContent)
            }
            if ex.head.method == .GET, ex.head.fields.first("Last-Event-ID") != nil {
                // MCP transports, "Resumability and Redelivery": a resumed stream may replay
                // the response to a tools/list, which is filtered as it was on its POST.
                ctx.response.install(ToolListStage(filter: toolListFilter(id: nil, request, admission)))
            }
            return .proceed
        }
        if let refusal = MCPBodyRules.refusal(ex.head.fields) {
            return .answer(
                ErrorResponse.make(
                    415, error: "invalid_request", description: refusal, requestID: ctx.requestID,
                    detail: "mcp: \(refusal)"), close: true)
        }
        request.services.readOwnBody(ex, ctx, limit: rules.maxRequestBytes) { [self] bytes in
            let message: MCPMessage
            switch judge(body: bytes, fields: ex.head.fields, admission: admission, ctx: ctx) {
            case .success(let m): message = m
            case .failure(let refusal):
                request.answer(refusal.response)
                return
            }
            if message.method == "tools/list", let id = message.id {
                // The answer is filtered on its way back (ToolListRelay): the caller sees
                // only the tools it may call, by the same check as a tools/call.
                ctx.response.install(ToolListStage(filter: toolListFilter(id: id, request, admission)))
            } else if let method = message.method, let id = message.id, rules.differsByCaller,
                ToolListFilter.isCacheable(method)
            {
                // What this caller may read another may not: a shared cache must not keep it.
                var marker = ToolListFilter(id: id, maxBytes: rules.maxResponseBytes, mayCall: { _ in true })
                marker.marksOnly = true
                ctx.response.install(ToolListStage(filter: marker))
            }
            if case .tool(let name) = message.target { ctx.mcpCall?.tool = name }
            if message.method == MCPListen.method {
                // MCP 2026-07-28: one long POST, answered by an SSE stream that ends at the
                // route's listen_timeout or the token's expiry, whichever comes first.
                var end = StreamEnd(
                    timeout: rules.listenTimeout, expiresAt: admission.token?.expiresAt,
                    now: request.services.wallClock.now)
                end.closingEvent = message.id.flatMap(MCPListen.closingEvent(id:))
                ctx.response.install(StreamEndStage(end))
            }
            request.admission?.body = BufferedRequestBody(bytes)
            request.resume()
        }
        return .suspend
    }

    /// A refusal of a POST's body, as a failure of `Result`.
    struct Refusal: Error {
        let response: GatewayResponse
    }

    /// The message in a POST's body, judged by the checks in the order a server would meet
    /// them: the message itself, the revision, the mirrored headers against the body
    /// (SEP-2243, read once), the route's rules; or the refusal. Every message judged is
    /// counted (`tokengate_mcp_calls_total`) and named for the access log and span.
    /// - answerComesBack: false in decision mode, where a list answered per caller cannot be
    ///   filtered on its way back (`perCallerListRefusal`).
    func judge(
        body bytes: [UInt8], fields: HTTP1Fields, admission: Admission, ctx: RequestContext,
        answerComesBack: Bool = true
    ) -> Result<MCPMessage, Refusal> {
        let headers = MCPMirroredHeaders.read(fields)
        let headerVersion = (try? headers.get())?.protocolVersion
        let message: MCPMessage
        switch MCPMessage.parse(bytes, headerVersion: headerVersion) {
        case .success(let m): message = m
        case .failure(let error):
            counted(ctx, method: nil, .invalid)
            return .failure(
                Refusal(
                    response: GatewayResponse(
                        status: 400, body: error.body, contentType: "application/json",
                        detail: "mcp: \(error.message)", reason: "mcp_invalid_message")))
        }
        let method = message.method
        if let method { ctx.noteMCPCall(method: method, named: message.named) }
        if let version = headerVersion ?? message.protocolVersion, !rules.protocolVersions.contains(version) {
            counted(ctx, method: method, .unsupportedVersion)
            return .failure(
                Refusal(
                    response: MCPProtocolVersion.refusal(
                        requested: version, supported: rules.protocolVersions, id: message.id)))
        }
        // SEP-2243: the server routes on the mirrored headers, the gateway judged the
        // body; a request on which they differ is refused before either is trusted.
        let mismatch: MCPHeaderMismatch?
        switch headers {
        case .failure(let why): mismatch = why
        case .success(let read): mismatch = read.mismatch(with: message)
        }
        if let mismatch {
            counted(ctx, method: method, .headerMismatch)
            return .failure(Refusal(response: mismatch.response(id: message.id)))
        }
        if !answerComesBack, let method, let refusal = perCallerListRefusal(method, ctx) {
            return .failure(Refusal(response: refusal))
        }
        if let denial = denial(message, admission: admission, ctx: ctx) {
            counted(ctx, method: method, .denied)
            return .failure(Refusal(response: denial))
        }
        counted(ctx, method: method, .allowed)
        return .success(message)
    }

    /// One judged message in `tokengate_mcp_calls_total`. A response to the server (no method)
    /// is no call; a body that is no message is counted under the method `-`.
    func counted(_ ctx: RequestContext, method: String?, _ outcome: MCPCallMetrics.Outcome) {
        guard method != nil || outcome == .invalid else { return }
        calls.record(route: ctx.route, method: method, outcome)
    }

    /// Whether the answer to `method` is this caller's on the request path: a `tools/list`
    /// the rules or the PDP filter, or a cacheable result marked private on a route whose
    /// rules differ by caller. In decision mode that answer never comes back through the
    /// gateway, so such a call is not let through there.
    func answeredPerCaller(_ method: String) -> Bool {
        if rules.differsByCaller, ToolListFilter.isCacheable(method) { return true }
        return method == "tools/list"
            && (rules.methods["tools/call"] != nil
                || route.options.settings.has(AuthorizeStage.Settings.self))
    }

    /// 403 (counted as denied) for a list whose answer this caller would get filtered or
    /// marked private, asked in decision mode, where the answer never comes back through the
    /// gateway; nil: it may go.
    func perCallerListRefusal(_ method: String, _ ctx: RequestContext) -> GatewayResponse? {
        guard answeredPerCaller(method) else { return nil }
        counted(ctx, method: method, .denied)
        return ErrorResponse.make(
            403, error: "access_denied",
            description: "\(method) is answered per caller on this route: put the gateway in the request path",
            requestID: ctx.requestID, detail: "decision: mcp \(method) cannot be filtered")
    }

    /// The filter of a `tools/list` answer: the tools the route's rules let this token call,
    /// and on a route with `authorize`, those the PDP allows (ToolListDecisions).
    private func toolListFilter(id: JSONValue?, _ request: RoutedRequest, _ admission: Admission) -> ToolListFilter {
        let rules = rules
        let token = admission.token
        var filter = ToolListFilter(
            id: id, maxBytes: rules.maxResponseBytes, mayCall: { rules.mayCallTool($0, token: token) })
        if let authorizer = route.options.settings[AuthorizeStage.Settings.self], let points {
            let base = AuthorizeStage.evaluation(authorizer, request, admission, request.services, action: "tools/call")
            filter.decisions =
                base.map {
                    points.toolListDecisions(
                        authorizer, $0, route: request.context.route, requestID: request.context.requestID)
                } ?? ToolListDecisions { _, done in done([]) }
        }
        return filter
    }

    /// 403 for a request from another site (MCPOrigin: DNS rebinding); nil: it may go on.
    func originRefusal(_ request: RoutedRequest) -> GatewayResponse? {
        let fields = request.head.fields
        let sentOrigin = fields.first("Origin")
        // The common case, decided before the Host is read: nothing to check it against.
        if origin.hosts.isEmpty && sentOrigin == nil { return nil }
        let asked = request.origin
        guard
            let why = origin.refusal(
                host: asked.forwardedHost ?? fields.first("Host") ?? "", scheme: asked.forwardedProto,
                origin: sentOrigin)
        else { return nil }
        return ErrorResponse.make(
            403, error: "access_denied", description: why, requestID: request.context.requestID, detail: "mcp: \(why)")
    }

    /// The refusal of a message the route's rules do not let this token make; nil: it passes.
    func denial(_ message: MCPMessage, admission: Admission, ctx: RequestContext) -> GatewayResponse? {
        // The call's name is the client's text: it goes to the log only, cut short.
        var call: String { String((message.target?.description ?? message.method ?? "a response").prefix(200)) }
        // Read once: each read of the class's property copies the token (its claims, its strings).
        let token = admission.token
        switch rules.check(message, token: token) {
        case .passes:
            return nil
        case .notListed:
            // `default: deny` and no rule names it: no scope would help, so no challenge to step up.
            return ErrorResponse.make(
                403, error: "access_denied", description: "this route does not allow that call",
                requestID: ctx.requestID, detail: "mcp: \(call) is not listed (default: deny)")
        case .fails(let needs, let failure):
            guard token != nil, let tokens = route.options.auth.tokenRoute, let refusals else {
                // Only token routes have MCP rules (the parser refuses the others).
                return ErrorResponse.make(
                    403, error: "access_denied", description: "this route does not allow that call",
                    requestID: ctx.requestID, detail: "mcp: \(call) without a token")
            }
            // MCP authorization 2025-11-25 ("Scope Challenge Handling"): the scopes this
            // call needs, the route's included, so one step-up suffices.
            let scopes = ConfigParser.scopes(of: [tokens.requirement] + needs)
            var denial = refusals.insufficientScope(
                needs: scopes, scheme: admission.tokenScheme, detail: "mcp: \(call): \(failure)")
            // A keys-only route's callers are told to come back with a key (its set's scheme),
            // as the route's own refusals tell them (TokenStage+APIKey).
            if tokens.keysOnly {
                for i in denial.challenges.indices { denial.challenges[i].scheme = tokens.apiKeys.challengeScheme }
            }
            let authFailure = AuthFailure(denial)
            ctx.rejection = .refused(authFailure)
            metrics.authFailure(authFailure)
            return ErrorResponse.auth(denial, requestID: ctx.requestID)
        }
    }
}
