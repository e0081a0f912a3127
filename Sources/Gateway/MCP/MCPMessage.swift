import JOSE

/// What the gateway reads of one JSON-RPC message a client POSTs to an MCP server (MCP
/// transports, streamable HTTP: "every JSON-RPC message sent from the client MUST be a new
/// HTTP POST"): its method and, for the calls that name one, the tool, resource or prompt.
/// A request, a notification or a response to the server (a sampling or elicitation result).
///
/// Strict, because the gateway's verdict must be the upstream's reading of the same bytes:
/// the JSON parser refuses duplicate member names (two `method` or `name` members, each
/// side picking another, is how a call slips past a tool rule), and a batch (a top-level
/// array, which MCP 2025-06-18 removed) is refused rather than judged element by element.
struct MCPMessage: Equatable {
    enum Kind: Equatable {
        /// A request (JSON-RPC 2.0 §4: it has an `id`) or a notification (no `id`, §4.1).
        case call(method: String)
        /// A response to a request of the server (§5): `result` or `error`, no `method`.
        case response
    }

    var kind: Kind
    /// The request's `id` (a string or a number), echoed in a JSON-RPC error; nil for a
    /// notification or an unreadable message.
    var id: JSONValue?
    /// The tool, resource or prompt a `tools/call`, `resources/read` or `prompts/get` names.
    var target: MCPTarget?
    /// `params.name` or `params.uri` as written, for the methods `Mcp-Name` mirrors
    /// (`MCPMirroredHeaders`); nil for the others.
    var named: String?
    /// The revision the message says it speaks: `params._meta["io.modelcontextprotocol/
    /// protocolVersion"]` (MCP 2026-07-28), when it is a string.
    var protocolVersion: String?
    /// The method is one the request's revision removed (`MCPProtocolVersion.isRemoved`): it
    /// needs no `Mcp-Name`, and without the params member it would name nothing it names no
    /// target (a `methods` entry still judges it).
    var removed = false

    var method: String? {
        if case .call(let method) = kind { return method }
        return nil
    }

    /// - headerVersion: the request's `MCP-Protocol-Version`, which counts before the body's
    ///   `_meta` for what the method means (MCPProtocolVersion).
    static func parse(_ bytes: [UInt8], headerVersion: String? = nil) -> Result<MCPMessage, JSONRPCError> {
        let read: JSONPicker.Reading
        do {
            read = try picker.read(bytes)
        } catch {
            // Duplicate members, trailing commas, bad escapes and too-deep nesting all land here.
            return .failure(
                JSONRPCError(.parseError, "the body is not a valid JSON text (RFC 8259, no duplicate names)"))
        }
        if read.top == .array {
            return .failure(
                JSONRPCError(.invalidRequest, "batches are not accepted: send one JSON-RPC message per POST"))
        }
        guard read.top == .object else {
            return .failure(JSONRPCError(.invalidRequest, "a JSON-RPC message is a JSON object"))
        }
        var id: JSONValue?
        if let raw = read[.id] {
            // MCP: "the ID MUST NOT be null"; JSON-RPC §4: a string or a number.
            switch raw {
            case .string(let text): id = .string(text)
            case .number(let text): id = .number(text)
            default: return .failure(JSONRPCError(.invalidRequest, "id must be a string or a number"))
            }
        }
        guard read[.jsonrpc] == .string("2.0") else {
            return .failure(JSONRPCError(.invalidRequest, "jsonrpc must be \"2.0\"", id: id))
        }
        guard let methodValue = read[.method] else {
            // A response: an id and exactly one of result and error (§5).
            guard id != nil, (read[.result] != nil) != (read[.error] != nil) else {
                return .failure(JSONRPCError(.invalidRequest, "a message without method must be a response", id: id))
            }
            return .success(MCPMessage(kind: .response, id: id))
        }
        guard case .string(let method) = methodValue, !method.isEmpty else {
            return .failure(JSONRPCError(.invalidRequest, "method must be a non-empty string", id: id))
        }
        if let params = read[.params], params != .object {
            // MCP's params are always an object (JSON-RPC §4.2 also allows an array).
            return .failure(JSONRPCError(.invalidRequest, "params must be an object", id: id))
        }
        if method == "tools/list" && id == nil {
            // A request without an id is a notification (JSON-RPC 2.0 §4.1), which the server
            // must not answer; one that answers anyway would pass a list the gateway could not
            // tell from the stream's other messages, so it is never sent.
            return .failure(JSONRPCError(.invalidRequest, "tools/list is a request: it needs an id"))
        }
        var out = MCPMessage(kind: .call(method: method), id: id)
        out.protocolVersion = read[.protocolVersion]?.string
        if let member = MCPMirroredHeaders.namedMember(of: method) { out.named = read[param: member]?.string }
        out.removed = MCPProtocolVersion.isRemoved(method, at: headerVersion ?? out.protocolVersion)
        // A removed method without the member names nothing (the server answers it); one with
        // it is judged by what it names all the same: a server that still speaks 2025 may
        // honour it whatever revision the request claims.
        if let member = MCPTarget.member(of: method), !(out.removed && read[param: member.name] == nil) {
            guard let text = read[param: member.name]?.string else {
                return .failure(
                    JSONRPCError(.invalidParams, "\(method) needs params.\(member.name) as a string", id: id))
            }
            switch member.make(text) {
            case .success(let target): out.target = target
            case .failure(let refusal):
                return .failure(JSONRPCError(.invalidParams, "params.\(member.name): \(refusal)", id: id))
            }
        }
        return .success(out)
    }

    /// The members the gateway reads, in the order of `picker`'s paths. The rest of the
    /// message (a tool's `arguments`, which may be large) is checked but never built.
    enum Member: Int, CaseIterable {
        case jsonrpc, id, method, params, result, error, name, uri, protocolVersion

        var path: [String] {
            switch self {
            case .jsonrpc: ["jsonrpc"]
            case .id: ["id"]
            case .method: ["method"]
            case .params: ["params"]
            case .result: ["result"]
            case .error: ["error"]
            case .name: ["params", "name"]
            case .uri: ["params", "uri"]
            case .protocolVersion: ["params", "_meta", "io.modelcontextprotocol/protocolVersion"]
            }
        }
    }

    private static let picker = JSONPicker(paths: Member.allCases.map(\.path))
}

extension JSONPicker.Reading {
    fileprivate subscript(member: MCPMessage.Member) -> JSONPicker.Picked? { values[member.rawValue] }

    /// `params.name` or `params.uri`, the two members a method names its target by.
    fileprivate subscript(param name: String) -> JSONPicker.Picked? {
        switch name {
        case "name": self[.name]
        case "uri": self[.uri]
        default: nil
        }
    }
}

extension JSONPicker.Picked {
    fileprivate var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

/// The thing an MCP call names, which a route may give its own requirement (`mcp.tools`,
/// `mcp.resources`, `mcp.prompts`).
enum MCPTarget: Equatable, CustomStringConvertible {
    case tool(String)
    case resource(String)
    case prompt(String)

    /// The params member that names the target of `method`, and how to make it from the
    /// member's text; nil when the method names none. MCP 2025-11-25: `tools/call`
    /// `params.name`, `resources/read` (and `resources/subscribe`, which reveals the same
    /// resource's updates) `params.uri`, `prompts/get` `params.name`. A resource is named by
    /// its normalized URI (ResourceURI), as its rule is.
    static func member(of method: String)
        -> (name: String, make: (String) -> Result<MCPTarget, ResourceURI.Refusal>)?
    {
        switch method {
        case "tools/call": ("name", { .success(.tool($0)) })
        case "resources/read", "resources/subscribe": ("uri", { ResourceURI.normalized($0).map(MCPTarget.resource) })
        case "prompts/get": ("name", { .success(.prompt($0)) })
        default: nil
        }
    }

    var description: String {
        switch self {
        case .tool(let name): "tool \"\(name)\""
        case .resource(let uri): "resource \"\(uri)\""
        case .prompt(let name): "prompt \"\(name)\""
        }
    }
}

/// A JSON-RPC 2.0 error (§5.1) the gateway answers itself, in the shape an MCP client reads.
struct JSONRPCError: Error, Equatable {
    /// The codes of JSON-RPC 2.0 §5.1 the gateway uses.
    enum Code: Int {
        case parseError = -32700
        case invalidRequest = -32600
        case invalidParams = -32602
        /// MCP 2026-07-28 (SEP-2243): a mirrored header missing, malformed or unlike the body.
        case headerMismatch = -32020
    }

    var code: Code
    var message: String
    var id: JSONValue?

    init(_ code: Code, _ message: String, id: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }

    /// The response object: `id` is the request's, or null when it could not be read (§5).
    var body: String {
        let idText = id.map { JSONSerializer.serialize($0) } ?? "null"
        return "{\"jsonrpc\":\"2.0\",\"id\":\(idText),\"error\":{\"code\":\(code.rawValue),"
            + "\"message\":\"\(JSONText.escape(message))\"}}\n"
    }
}

extension MCPMessage {
    /// The call as the access log and the server span name it: the method and what it names,
    /// each cut at 200 bytes of the client's text. A resource's URI loses its userinfo, query
    /// and fragment, which may hold a credential as a request's query may (RFC 6750 §2.3).
    static func loggedCall(method: String, named: String?) -> (method: String, name: String?) {
        var name = named
        if let uri = named, MCPMirroredHeaders.namedMember(of: method) == "uri",
            uri.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "@") })
        {
            var kept = Substring(uri)
            if let end = kept.firstIndex(where: { $0 == "?" || $0 == "#" }) { kept = kept[..<end] }
            if let scheme = kept.range(of: "://") {
                let authorityEnd = kept[scheme.upperBound...].firstIndex(of: "/") ?? kept.endIndex
                if let at = kept[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
                    kept = kept[..<scheme.upperBound] + kept[kept.index(after: at)...]
                }
            }
            name = String(kept)
        }
        return (cut(method), name.map(cut))
    }

    /// At most 200 bytes' worth of the client's text (a whole string when it is shorter).
    private static func cut(_ text: String) -> String {
        text.utf8.count <= 200 ? text : String(text.prefix(200))
    }
}
