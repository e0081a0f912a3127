import Reactor

/// The HTTP methods of MCP's streamable HTTP transport (MCP 2025-11-25, "Transports"): every
/// client message is a POST, a GET opens the server's SSE stream, a DELETE ends a session.
/// Only a POST's body is read and judged (MCPStage); a JSON-RPC call in the body of any other
/// method would reach a server that reads one there unjudged, so no other method passes, and
/// a GET or DELETE passes only without content.
enum MCPTransportMethods {
    /// RFC 9110 §10.2.1: a 405 lists the methods the target supports.
    static let allow = "GET, POST, DELETE"

    /// Why a request that is not a POST is refused; nil: it passes on the route's requirement.
    /// `hasContent`: the request carries content (or announces it).
    static func refusal(_ head: HTTPRequestHead, hasContent: Bool, requestID: String) -> GatewayResponse? {
        // The method's name goes to the log only, cut short.
        var name: String { String(head.methodName.prefix(20)) }
        switch head.method {
        case .POST:
            return nil
        case .GET, .DELETE:
            // RFC 9110 §9.3.1 and §9.3.5: content in a GET or DELETE "has no generally defined
            // semantics"; the server might read a call there, which the gateway would not judge.
            guard hasContent else { return nil }
            return ErrorResponse.make(
                400, error: "invalid_request",
                description: "an MCP GET or DELETE carries no content: send each JSON-RPC message as a POST",
                requestID: requestID, detail: "mcp: \(name) with content")
        case .HEAD, .PUT, .PATCH, .OPTIONS, nil:
            return ErrorResponse.make(
                405, error: "invalid_request",
                description: "an MCP endpoint takes GET, POST and DELETE only",
                requestID: requestID, headers: [("Allow", allow)], detail: "mcp: method \(name)")
        }
    }

    /// Whether a body so framed is content: any but an empty one (a stream of DATA frames or
    /// chunks may turn out empty, but is refused before it is read).
    static func hasContent(_ framing: RequestBodyFraming) -> Bool {
        switch framing {
        case .none: false
        case .length(let n): n > 0
        case .streamed: true
        }
    }

    /// Whether a request head announces content (RFC 9112 §6.3: a `Transfer-Encoding`, or a
    /// `Content-Length` other than 0): what a decision knows of the original request's body.
    static func announcesContent(_ fields: HTTP1Fields) -> Bool {
        if fields.first("Transfer-Encoding") != nil { return true }
        return fields.values("Content-Length").contains { Int($0) != 0 }
    }
}
