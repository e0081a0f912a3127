import Reactor

/// What an ingress sent of an MCP POST's body with its question: Envoy's ext_authz with
/// `with_request_body` (HTTP: as the decision request's body; gRPC: in the `CheckRequest`),
/// Traefik's `forwardAuth` with `forwardBody`. nginx's `auth_request` never sends one.
enum IngressBody {
    /// No body came: the call is judged on its mirrored headers, or not at all.
    case none
    /// The ingress cut it at its own limit (Envoy's `allow_partial_message` marks that with
    /// `x-envoy-auth-partial-body: true`): part of a message is never judged.
    case partial
    /// Larger than any MCP route takes (a `CheckRequest`'s body is bounded before it is read).
    case pastLimit
    /// As text (a `CheckRequest`'s `body`): Envoy replaces each byte that is not UTF-8 there,
    /// so what would be judged may not be what the server gets. `pack_as_bytes` sends it whole.
    case text
    /// In hand (a `CheckRequest`'s `body` or `raw_body`).
    case bytes([UInt8])
    /// On its way, as the decision request's own body.
    case unread

    static func of(_ request: RoutedRequest) -> IngressBody {
        let partial = request.head.fields.first("x-envoy-auth-partial-body")?.trimmingOWS.lowercased() == "true"
        if case .extAuthz(let check) = request.context.kind {
            let a = check.attributes
            if a.bodyPastLimit { return .pastLimit }
            guard let body = a.body else { return .none }
            if partial || a.bodyCut { return .partial }
            return a.bodyIsText ? .text : .bytes(body)
        }
        guard MCPTransportMethods.hasContent(request.exchange.body.framing) else { return .none }
        return partial ? .partial : .unread
    }
}

extension MCPDecisionStage {
    /// The verdict on a body in hand.
    func judgeBody(_ bytes: [UInt8], _ request: RoutedRequest) -> StageOutcome {
        if let refusal = verdict(on: bytes, request) { return .answer(refusal) }
        return .proceed
    }

    /// The decision request's body read (bounded by the route's `max_request_bytes`, 413
    /// past it), then judged.
    func readBody(_ request: RoutedRequest) -> StageOutcome {
        request.services.readOwnBody(request.exchange, request.context, limit: judge.rules.maxRequestBytes) {
            [self] bytes in
            if let refusal = verdict(on: bytes, request) {
                request.answer(refusal)
            } else {
                request.resume()
            }
        }
        return .suspend
    }

    /// The request path's checks on the body the ingress will forward, in its order: its
    /// framing, the message, the revision, the mirrored headers against it, the rules. A
    /// list the request path would answer per caller is refused (`perCallerListRefusal`).
    /// nil: allowed.
    private func verdict(on bytes: [UInt8], _ request: RoutedRequest) -> GatewayResponse? {
        let ctx = request.context
        let fields = request.head.fields
        guard bytes.count <= judge.rules.maxRequestBytes else {
            return ErrorResponse.make(
                413, error: "invalid_request", description: "the request body is too large", requestID: ctx.requestID,
                detail: "decision: mcp body past max_request_bytes")
        }
        if let refusal = MCPBodyRules.refusal(fields) {
            return ErrorResponse.make(
                415, error: "invalid_request", description: refusal, requestID: ctx.requestID,
                detail: "decision: mcp: \(refusal)")
        }
        let message: MCPMessage
        switch judge.judge(body: bytes, fields: fields, admission: request.admitted, ctx: ctx, answerComesBack: false) {
        case .success(let m): message = m
        case .failure(let refusal): return refusal.response
        }
        if case .tool(let name) = message.target { ctx.mcpCall?.tool = name }
        return nil
    }
}
