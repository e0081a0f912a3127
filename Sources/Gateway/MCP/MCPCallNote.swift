/// An MCP POST's call, in the request's state: its method and what it names as the access log
/// and the server span give them (`MCPMessage.loggedCall`: at most 200 bytes of the client's
/// text each), and, once the body is judged, the tool a `tools/call` names, which `tool` rate
/// limits and the authorizer ask about.
final class MCPCallNote {
    enum Key: RequestStateKey { typealias Value = MCPCallNote }
    let method: String
    let name: String?
    /// The tool a judged `tools/call` names, as the client sent it.
    var tool: String?

    init(method: String, named: String?) {
        (self.method, self.name) = MCPMessage.loggedCall(method: method, named: named)
    }
}

extension RequestContext {
    /// The MCP call the request carries, once the MCP stage has read its method.
    var mcpCall: MCPCallNote? { state[MCPCallNote.Key.self] }

    /// Notes the MCP call the request carries, for the log, the span and the stages after.
    func noteMCPCall(method: String, named: String?) {
        state[MCPCallNote.Key.self] = MCPCallNote(method: method, named: named)
    }
}
