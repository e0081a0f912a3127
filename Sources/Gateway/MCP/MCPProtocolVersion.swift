import JOSE
import Reactor

/// The MCP revision a request speaks, and the refusal of one a route does not take. A 2025
/// client negotiated its revision at `initialize` and says it in `MCP-Protocol-Version`; a
/// 2026-07-28 client has no session and says it in each message's `params._meta`
/// (`io.modelcontextprotocol/protocolVersion`) and in the header. The header counts first.
enum MCPProtocolVersion {
    /// The revisions tokengate judges calls of, oldest first.
    static let known = ["2025-06-18", "2025-11-25", MCPMirroredHeaders.mirroringVersion]

    /// Whether `method` is one that the revision `version` (nil: not said) no longer has:
    /// client requests and notifications MCP 2026-07-28 removed. They are the handshake and
    /// its notification, `ping`, `logging/setLevel`, the `resources/subscribe` pair (now
    /// `subscriptions/listen`), progress and roots notifications from the client, and the
    /// 2025-11-25 `tasks/*`. In a request at that revision they need no `Mcp-Name`, and one
    /// that names nothing reaches the server, whose `-32601` is the answer; one that still
    /// names a resource is judged by it, as a server that speaks 2025 too may honour it.
    static func isRemoved(_ method: String, at version: String?) -> Bool {
        guard let version, version >= MCPMirroredHeaders.mirroringVersion else { return false }
        // A switch, not a set: asked on every call, and a set hashes the method each time.
        // By length first: most calls (`tools/call`) meet one compare, or none.
        switch method.utf8.count {
        case 4: return method == "ping"
        case 9: return method == "tasks/get"
        case 10: return method == "initialize" || method == "tasks/list"
        case 12: return method == "tasks/result" || method == "tasks/cancel"
        case 16: return method == "logging/setLevel"
        case 19: return method == "resources/subscribe"
        case 21: return method == "resources/unsubscribe"
        case 22: return method == "notifications/progress"
        case 25: return method == "notifications/initialized"
        case 32: return method == "notifications/roots/list_changed"
        default: return false
        }
    }

    /// Whether a route that takes `versions` still serves 2025 clients (their GET stream and
    /// DELETE of a session).
    static func servesSessions(_ versions: [String]) -> Bool {
        versions.contains { $0 < MCPMirroredHeaders.mirroringVersion }
    }

    /// 400 with the JSON-RPC error `-32022` (UnsupportedProtocolVersion) and, as its `data`,
    /// the revisions the route takes and the one requested.
    static func refusal(requested: String, supported: [String], id: JSONValue?) -> GatewayResponse {
        var error = JSONObject()
        error["code"] = .number("-32022")
        error["message"] = .string("unsupported MCP protocol version")
        error["data"] = .object(
            JSONObject(["supported": .array(supported.map(JSONValue.string)), "requested": .string(requested)]))
        var body = JSONObject()
        body["jsonrpc"] = .string("2.0")
        body["id"] = id ?? .null
        body["error"] = .object(error)
        return GatewayResponse(
            status: 400, body: JSONSerializer.serialize(.object(body)) + "\n", contentType: "application/json",
            detail: "mcp: protocol version \(requested.prefix(40)) is not one this route takes",
            reason: "mcp_unsupported_version")
    }
}
