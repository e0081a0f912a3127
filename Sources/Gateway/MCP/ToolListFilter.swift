import JOSE

/// What a `tools/list` answer becomes before its caller reads it: the tools this caller could
/// not call are taken out, so a caller sees only the tools it may call (MCP 2025-11-25,
/// server/tools, "Listing Tools": the result's `tools` array, each tool an object with a
/// `name`). Only the JSON-RPC response to this request (JSON-RPC 2.0 §5: the same `id`, a
/// `result`) is rewritten; any other message passes as it came.
struct ToolListFilter {
    /// Why an answer cannot be passed on: the gateway would have to pass a list it cannot
    /// filter, so it passes nothing.
    struct Refusal: Error, Equatable, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// The `id` of the `tools/list` request (JSON-RPC 2.0 §5: the response's "MUST be the
    /// same as the value of the id member"): a string matches the same string, a number the
    /// same number in any form (`1.0` and `1e0` are `1`: a server that reads the id as a
    /// number may echo it otherwise, and an answer the gateway failed to match would pass
    /// unfiltered). `"1"` is not `1`.
    /// nil on a resumed stream (a GET with `Last-Event-ID`), which may replay the response to
    /// a `tools/list` whose id the gateway never saw: there every response with a
    /// `result.tools` array is filtered.
    let id: JSONValue?
    /// The most of a JSON answer held whole, and of one SSE event (`mcp.max_response_bytes`).
    let maxBytes: Int
    /// Whether this caller could call the tool so named (MCPRules, the token's claims).
    let mayCall: (String) -> Bool
    /// On a route with `authorize`: the PDP's answers, asked when the answer's tools are
    /// known (`toolNames`); a tool it does not allow is left out too.
    var decisions: ToolListDecisions? = nil
    /// The answer to another cacheable call (`server/discover`, `prompts/list`,
    /// `resources/list`, `resources/templates/list`, `resources/read`) on a route whose rules
    /// differ by caller: nothing is removed, the result is only marked private.
    var marksOnly = false

    /// Whether MCP 2026-07-28 lets a cache keep the method's result (SEP-2549: `ttlMs`,
    /// `cacheScope`). A switch, not a set: asked on every call, and a set hashes the method.
    /// By length first: most calls meet one compare, or none.
    static func isCacheable(_ method: String) -> Bool {
        switch method.utf8.count {
        case 10: method == "tools/list"
        case 12: method == "prompts/list"
        case 14: method == "resources/list" || method == "resources/read"
        case 15: method == "server/discover"
        case 24: method == "resources/templates/list"
        default: false
        }
    }

    /// The names of the tools in the message, when it is this request's response (nil
    /// otherwise, or when it is not JSON: `filter` says why then).
    func toolNames(in bytes: [UInt8]) -> [String]? {
        guard let value = try? JSONParser.parse(bytes) else { return nil }
        let messages: [JSONObject]
        switch value {
        case .object(let o): messages = [o]
        case .array(let batch): messages = batch.compactMap(\.object)
        default: return nil
        }
        var names: [String]?
        for message in messages where isResponse(message) {
            let tools = message["result"]?.object?["tools"]?.array ?? []
            names = (names ?? []) + tools.compactMap { $0.object?["name"]?.string }
        }
        return names
    }

    /// Whether the message is this request's result (see `filtered`).
    private func isResponse(_ message: JSONObject) -> Bool {
        guard message["method"] == nil, let result = message["result"] else { return false }
        if let id {
            guard let other = message["id"], Self.same(id, other) else { return false }
            return true
        }
        return result.object?["tools"]?.array != nil
    }

    /// The message with the tools this caller may not call removed; nil when it is not the
    /// response to this request (or a JSON-RPC error), so it goes on unchanged.
    func filter(message bytes: [UInt8]) throws(Refusal) -> [UInt8]? {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw Refusal(reason: "the answer is not one JSON text (RFC 8259, no duplicate names)")
        }
        switch value {
        case .object(let message):
            guard let out = try filtered(message) else { return nil }
            return Array(out.utf8)
        case .array(let batch):
            // A batch (MCP 2025-03-26 allowed one): its response to this request is filtered too.
            var parts: [String] = []
            var changed = false
            for element in batch {
                if let object = element.object, let out = try filtered(object) {
                    parts.append(out)
                    changed = true
                } else {
                    parts.append(JSONSerializer.serialize(element))
                }
            }
            return changed ? Array("[\(parts.joined(separator: ","))]".utf8) : nil
        default:
            return nil
        }
    }

    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): x == y
        case (.number(let x), .number(let y)): x == y || Double(x).map { $0 == Double(y) } == true
        default: false
        }
    }

    /// The response object rewritten, or nil when it is not this request's result.
    private func filtered(_ message: JSONObject) throws(Refusal) -> String? {
        // A request or notification of the server's own has a `method`; its id is its own.
        guard message["method"] == nil, let result = message["result"] else { return nil }
        if let id {
            guard let other = message["id"], Self.same(id, other) else { return nil }
        } else {
            guard result.object?["tools"]?.array != nil else { return nil }
        }
        if marksOnly {
            // This caller's answer, whatever the server said (SEP-2549); `ttlMs` is kept.
            guard var marked = result.object else { return nil }
            marked["cacheScope"] = .string("private")
            var out = message
            out["result"] = .object(marked)
            return JSONSerializer.serialize(.object(out))
        }
        guard let resultObject = result.object, let tools = resultObject["tools"]?.array else {
            throw Refusal(reason: "the tools/list result has no tools array")
        }
        let kept = tools.filter { tool in
            // A tool without a name cannot be called, so nobody may see it.
            guard let name = tool.object?["name"]?.string else { return false }
            return mayCall(name) && (decisions?.allows(name) ?? true)
        }
        // Set in place: the members keep their order, each value as parsed.
        var newResult = resultObject
        newResult["tools"] = .array(kept)
        // MCP 2026-07-28 (SEP-2549): a list filtered for this caller is this caller's; a
        // server's `"public"` would let a shared cache serve it to the next. `ttlMs` is kept.
        newResult["cacheScope"] = .string("private")
        var out = message
        out["result"] = .object(newResult)
        return JSONSerializer.serialize(.object(out))
    }
}
