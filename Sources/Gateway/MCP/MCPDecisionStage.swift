import JOSE
import Reactor

/// An MCP route's stage in decision mode, where the ingress asks about a request it holds.
/// The other methods are refused as in the request path (MCPTransportMethods), content being
/// what the original request's head announces. A POST's call is judged:
///
/// - on a route that takes MCP 2026-07-28 only (`protocol_versions`), on its mirrored headers
///   (SEP-2243: `Mcp-Method`, `Mcp-Name`), by the route's rules as the request path judges a
///   body. An ingress such as nginx's `auth_request` sends no body; the verdict then relies
///   on the MCP server refusing a body that disagrees with the headers, as a 2026-07-28
///   server must (docs/decision-mode.md). A list whose answer the rules would filter cannot
///   be filtered here, and is refused;
/// - on a route that still takes a 2025 revision, the server may run the body whatever the
///   headers say, and a call is not judged on the route's requirement alone: 403, put the
///   gateway in the request path;
/// - at any revision, on its body when the ingress sends it (`MCPDecisionStage+Body`): then
///   exactly as the request path judges it, headers against the body included.
final class MCPDecisionStage: Stage {
    /// The request path's stage: its rules, its refusals and its Origin check.
    let judge: MCPStage

    init(judge: MCPStage) { self.judge = judge }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        if let refusal = judge.originRefusal(request) { return .answer(refusal) }
        guard request.head.method == .POST else {
            if request.admission?.preflight == true { return .proceed }
            let hasContent = MCPTransportMethods.announcesContent(request.head.fields)
            if let refusal = MCPTransportMethods.refusal(request.head, hasContent: hasContent, requestID: ctx.requestID)
            {
                return .answer(refusal)
            }
            return .proceed
        }
        // The ingress sent the body (Envoy's `with_request_body`, Traefik's `forwardBody`): it
        // is judged as the request path judges it, at any revision.
        switch IngressBody.of(request) {
        case .none: break
        case .partial:
            return .answer(
                ErrorResponse.make(
                    413, error: "invalid_request",
                    description: "the ingress sent part of the body: an MCP call is judged whole",
                    requestID: ctx.requestID, detail: "decision: mcp body cut by the ingress"))
        case .pastLimit:
            return .answer(
                ErrorResponse.make(
                    413, error: "invalid_request", description: "the request body is too large",
                    requestID: ctx.requestID, detail: "decision: mcp body past max_request_bytes"))
        case .text:
            return .answer(
                ErrorResponse.make(
                    400, error: "invalid_request",
                    description:
                        "the ingress sent the body as text, which may not be the bytes the server gets: set with_request_body.pack_as_bytes",
                    requestID: ctx.requestID, detail: "decision: mcp body as text"))
        case .bytes(let bytes): return judgeBody(bytes, request)
        case .unread: return readBody(request)
        }
        // Only where the server behind is a 2026-07-28 one (the route takes no 2025 revision):
        // a 2025 server ignores the headers and runs the body, whatever a client claims.
        guard !MCPProtocolVersion.servesSessions(judge.rules.protocolVersions),
            case .success(let headers) = MCPMirroredHeaders.read(request.head.fields),
            let version = headers.protocolVersion, version >= MCPMirroredHeaders.mirroringVersion,
            let method = headers.method, !method.isEmpty
        else {
            return .answer(
                ErrorResponse.make(
                    403, error: "access_denied",
                    description: "an MCP route judges each call by its body: put the gateway in the request path",
                    requestID: ctx.requestID, detail: "decision: mcp route, no body to judge"))
        }
        guard judge.rules.protocolVersions.contains(version) else {
            judge.counted(ctx, method: method, .unsupportedVersion)
            return .answer(
                MCPProtocolVersion.refusal(requested: version, supported: judge.rules.protocolVersions, id: nil))
        }
        // Envoy's ext_authz `headers` map joins a repeated field with ",": two `Mcp-Name`s
        // would arrive as one name nobody calls. A plain mirrored value with a comma is refused
        // here; a name that holds one rides in its `=?base64?…?=` form.
        if method.contains(",") || headers.name.map({ $0.contains(",") && !Self.isSentinel(request) }) == true {
            judge.counted(ctx, method: method, .headerMismatch)
            return .answer(
                MCPHeaderMismatch("a mirrored header holds a comma: send it once, in its Base64 form").response(id: nil)
            )
        }
        if let refusal = judge.perCallerListRefusal(method, ctx) { return .answer(refusal) }
        // The call as its headers name it: the method, and the tool, resource or prompt.
        var message = MCPMessage(kind: .call(method: method), id: nil)
        message.removed = MCPProtocolVersion.isRemoved(method, at: version)
        if let member = MCPTarget.member(of: method) {
            let unreadable = MCPHeaderMismatch("Mcp-Name is required for \(method), a name the route's rules can read")
            if let name = headers.name {
                guard case .success(let target) = member.make(name) else {
                    judge.counted(ctx, method: method, .headerMismatch)
                    return .answer(unreadable.response(id: nil))
                }
                message.target = target
                message.named = name
            } else if !message.removed {
                judge.counted(ctx, method: method, .headerMismatch)
                return .answer(unreadable.response(id: nil))
            } else if !judge.rules.resources.isEmpty || !judge.rules.allowsUnlisted {
                // A removed method may still name a resource in its body, which a server that
                // speaks 2025 too would honour: where rules could refuse it, it is judged by
                // its name, so the name must come.
                judge.counted(ctx, method: method, .headerMismatch)
                return .answer(
                    MCPHeaderMismatch("Mcp-Name is required for \(method) on this route").response(id: nil))
            }
        }
        ctx.noteMCPCall(method: method, named: message.named)
        if let denial = judge.denial(message, admission: request.admitted, ctx: ctx) {
            judge.counted(ctx, method: method, .denied)
            return .answer(denial)
        }
        judge.counted(ctx, method: method, .allowed)
        if case .tool(let name) = message.target { ctx.mcpCall?.tool = name }
        return .proceed
    }

    /// Whether the request's `Mcp-Name` is written in its Base64 form.
    private static func isSentinel(_ request: RoutedRequest) -> Bool {
        request.head.fields.first("Mcp-Name")?.trimmingOWS.hasPrefix("=?base64?") == true
    }
}
