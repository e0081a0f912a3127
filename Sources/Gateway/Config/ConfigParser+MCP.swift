import OAuth
import Yams

/// A token route's `mcp:` section: the rules each JSON-RPC call to an MCP server is judged by
/// (MCPRules.swift). docs/tokens.md ("In front of MCP servers") says how a call is read.
extension ConfigParser {
    /// The largest `max_request_bytes`: the body is held whole while it is judged.
    static let mcpMaxRequestBytesCeiling = 16 << 20
    /// The largest `max_response_bytes`: a `tools/list` answer is held whole while it is filtered.
    static let mcpMaxResponseBytesCeiling = 64 << 20

    /// nil without `mcp`, or when it cannot apply (the problem is reported at its key).
    static func mcpRules(_ m: [String: Node], path route: String, auth: AuthMode, _ r: ConfigReader) -> MCPRules? {
        guard let node = m["mcp"] else { return nil }
        let p = "\(route).mcp"
        guard auth == .bearer || auth == .dpop || auth == .token else {
            r.problem(p, node, "needs auth: bearer, dpop or token (calls are judged by the access token's scopes)")
            return nil
        }
        if let n = m["token_in_body"], r.bool(n, path: "\(route).token_in_body") == true {
            r.problem(
                "\(route).token_in_body", n,
                "cannot be used with mcp: an MCP request body is one JSON-RPC message, not a form (RFC 6750 §2.2)")
        }
        guard let section = r.mapping(node, path: p, section: .mcp) else { return nil }
        var rules = MCPRules()
        if let n = section["default"], let s = r.string(n, path: "\(p).default") {
            switch s {
            case "allow": rules.allowsUnlisted = true
            case "deny": rules.allowsUnlisted = false
            default: r.problem("\(p).default", n, "must be allow or deny")
            }
        }
        if let n = section["max_request_bytes"], let v = r.size(n, path: "\(p).max_request_bytes") {
            if v < 1 || v > mcpMaxRequestBytesCeiling {
                r.problem("\(p).max_request_bytes", n, "must be between 1 B and 16MB")
            } else {
                rules.maxRequestBytes = v
            }
        }
        if let n = section["max_response_bytes"], let v = r.size(n, path: "\(p).max_response_bytes") {
            if v < 1 || v > mcpMaxResponseBytesCeiling {
                r.problem("\(p).max_response_bytes", n, "must be between 1 B and 64MB")
            } else {
                rules.maxResponseBytes = v
            }
        }
        rules.methods = mcpTable(section["methods"], path: "\(p).methods", r)
        rules.tools = mcpTable(section["tools"], path: "\(p).tools", r)
        rules.resources = mcpTable(section["resources"], path: "\(p).resources", r)
        rules.prompts = mcpTable(section["prompts"], path: "\(p).prompts", r)
        return rules
    }

    /// `NAME: { require: { … } }` per method, tool, resource or prompt.
    private static func mcpTable(_ node: Node?, path p: String, _ r: ConfigReader) -> [String: AuthorizationRequirement]
    {
        guard let node, let table = r.mapping(node, path: p, section: nil) else { return [:] }
        var out: [String: AuthorizationRequirement] = [:]
        for (name, value) in table {
            let ep = "\(p).\(name)"
            if name.isEmpty {
                r.problem(ep, value, "needs a name")
                continue
            }
            guard let entry = r.mapping(value, path: ep, section: .mcpRule) else { continue }
            guard let n = entry["require"] else {
                r.problem(ep, value, "needs require: the scopes or claims a call needs")
                continue
            }
            out[name] = requirement(n, path: "\(ep).require", r)
        }
        return out
    }
}
