import JOSE
import OAuth
import Reactor

/// An MCP route's second stage: the token admitted the request; now the JSON-RPC message in a
/// POST's body is read and judged by the route's `mcp` rules before anything is forwarded.
/// GET (the server's SSE stream) and DELETE (the end of a session) carry no call and pass on
/// the route's requirement alone; `Mcp-Session-Id` goes through as any field does.
extension Worker {
    func judgeMCPCall(
        _ ex: ServerExchange, _ ctx: RequestContext, rules: MCPRules, plan: RoutePlan, admission: Admission,
        then forward: @escaping Admitted
    ) {
        guard ex.head.method == .POST, !admission.preflight else {
            if ex.head.method == .GET, !admission.preflight, ex.head.fields.first("Last-Event-ID") != nil {
                // MCP transports, "Resumability and Redelivery": a resumed stream may replay
                // the response to a tools/list, which is filtered as it was on its POST.
                let token = admission.token
                ctx.toolListFilter = ToolListFilter(
                    id: nil, maxBytes: rules.maxResponseBytes, mayCall: { rules.mayCallTool($0, token: token) })
            }
            forward(ctx, admission)
            return
        }
        if let refusal = MCPBodyRules.refusal(ex.head.fields) {
            answer(
                ex, ctx,
                ErrorResponse.make(
                    415, error: "invalid_request", description: refusal, requestID: ctx.requestID,
                    detail: "mcp: \(refusal)"), close: true)
            return
        }
        readOwnBody(ex, ctx, limit: rules.maxRequestBytes) { [unowned self] bytes in
            let message: MCPMessage
            switch MCPMessage.parse(bytes) {
            case .success(let m): message = m
            case .failure(let error):
                self.answer(
                    ex, ctx,
                    GatewayResponse(
                        status: 400, body: error.body, contentType: "application/json",
                        detail: "mcp: \(error.message)", reason: "mcp_invalid_message"))
                return
            }
            if let denial = self.mcpDenial(message, rules: rules, plan: plan, admission: admission, ctx: ctx) {
                self.answer(ex, ctx, denial)
                return
            }
            if message.method == "tools/list", let id = message.id {
                // The answer is filtered on its way back (ToolListRelay): the caller sees
                // only the tools it may call, by the same check as a tools/call.
                let token = admission.token
                ctx.toolListFilter = ToolListFilter(
                    id: id, maxBytes: rules.maxResponseBytes, mayCall: { rules.mayCallTool($0, token: token) })
            }
            var admitted = admission
            admitted.body = BufferedRequestBody(bytes)
            forward(ctx, admitted)
        }
    }

    /// The refusal of a message the route's rules do not let this token make; nil: it passes.
    private func mcpDenial(
        _ message: MCPMessage, rules: MCPRules, plan: RoutePlan, admission: Admission, ctx: RequestContext
    ) -> GatewayResponse? {
        // The call's name is the client's text: it goes to the log only, cut short.
        var call: String { String((message.target?.description ?? message.method ?? "a response").prefix(200)) }
        switch rules.check(message, token: admission.token) {
        case .passes:
            return nil
        case .notListed:
            // `default: deny` and no rule names it: no scope would help, so no challenge to step up.
            return ErrorResponse.make(
                403, error: "access_denied", description: "this route does not allow that call",
                requestID: ctx.requestID, detail: "mcp: \(call) is not listed (default: deny)")
        case .fails(let needs, let failure):
            guard admission.token != nil, let tokens = plan.route.auth.tokenRoute, let refusals = plan.tokens?.refusals
            else {
                // Only token routes have MCP rules (the parser refuses the others).
                return ErrorResponse.make(
                    403, error: "access_denied", description: "this route does not allow that call",
                    requestID: ctx.requestID, detail: "mcp: \(call) without a token")
            }
            // MCP authorization 2025-11-25 ("Scope Challenge Handling"): the scopes this
            // call needs, the route's included, so one step-up suffices.
            let scopes = ConfigParser.scopes(of: [tokens.requirement] + needs)
            let denial = refusals.insufficientScope(
                needs: scopes, scheme: admission.tokenScheme, detail: "mcp: \(call): \(failure)")
            let authFailure = AuthFailure(denial)
            ctx.rejection = .refused(authFailure)
            metrics.authFailure(authFailure)
            return ErrorResponse.auth(denial, requestID: ctx.requestID)
        }
    }

    /// In decision mode the ingress sends no body: an MCP route's POST cannot be judged call
    /// by call, so it is refused rather than let through on the route's requirement alone.
    func mcpDecisionRefusal(_ route: RouteConfig, head: HTTPRequestHead, ctx: RequestContext) -> GatewayResponse? {
        guard head.method == .POST, route.auth.tokenRoute?.mcp != nil else { return nil }
        return ErrorResponse.make(
            403, error: "access_denied",
            description: "an MCP route judges each call by its body: put the gateway in the request path",
            requestID: ctx.requestID, detail: "decision: mcp route, no body to judge")
    }
}

/// What an MCP POST's framing must be for the gateway to read the same message the server
/// will (MCP transports, streamable HTTP: a JSON-RPC message as `application/json`).
enum MCPBodyRules {
    /// Why the body cannot be judged; nil: it can. A body in another media type, in another
    /// charset, or under a content coding could be read differently by the server, so a call
    /// could pass as something else (RFC 9110 §15.5.16: 415 for both).
    static func refusal(_ fields: HTTP1Fields) -> String? {
        // What every MCP client sends, decided on the field bytes without building a string
        // (the general reading below cost 11,000 instructions a call): one Content-Type,
        // exactly `application/json` in any case, and no Content-Encoding.
        var typeCount = 0
        var plainJSON = false
        var codings = 0
        fields.forEachValue(named: "Content-Type") { value in
            typeCount += 1
            plainJSON = isPlainJSON(value)
        }
        fields.forEachValue(named: "Content-Encoding") { _ in codings += 1 }
        if typeCount == 1 && plainJSON && codings == 0 { return nil }
        let types = fields.values("Content-Type")
        guard types.count == 1, isJSON(types[0]) else {
            return "an MCP request body must be one JSON-RPC message as application/json (charset utf-8, if any)"
        }
        for coding in fields.values("Content-Encoding") {
            let codings = coding.split(separator: ",").map { $0.trimmingOWS.lowercased() }
            if codings.contains(where: { $0 != "identity" }) {
                return "an MCP request body must not carry a content coding"
            }
        }
        return nil
    }

    /// Whether `value` is `application/json` with no parameter, in any case (RFC 9110 §8.3.1).
    static func isPlainJSON(_ value: Span<UInt8>) -> Bool {
        let expected = plainJSONBytes
        guard value.count == expected.count else { return false }
        for i in 0..<value.count {
            var c = value[i]
            if c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") { c |= 0x20 }
            if c != expected[i] { return false }
        }
        return true
    }
    private static let plainJSONBytes = Array("application/json".utf8)

    /// `application/json`, with at most a `charset` parameter of `utf-8` (RFC 8259 §8.1:
    /// JSON exchanged between systems is UTF-8; RFC 9110 §8.3.1: names are case-insensitive).
    static func isJSON(_ value: String) -> Bool {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        guard parts[0].trimmingOWS.lowercased() == "application/json" else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0].trimmingOWS.lowercased() == "charset" else { return false }
            var charset = Substring(pair[1].trimmingOWS)
            if charset.count >= 2, charset.hasPrefix("\""), charset.hasSuffix("\"") {
                charset = charset.dropFirst().dropLast()
            }
            guard charset.lowercased() == "utf-8" else { return false }
        }
        return true
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (RFC 9110 §5.6.3 OWS).
    fileprivate var trimmingOWS: String {
        var s = self[...]
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
