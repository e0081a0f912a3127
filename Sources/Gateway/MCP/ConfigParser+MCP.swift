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
    static func mcpRules(_ k: RouteKeys, auth: AuthMode, _ r: ConfigReader) -> MCPRules? {
        guard let given = k.mcp, ConfigValidation.mcp(k, auth: auth, r) else { return nil }
        let p = given.path
        guard let section = r.mapping(given.node, path: p, section: .mcp) else { return nil }
        var rules = MCPRules()
        MCPRules.keyTable.read(section, into: &rules, path: p, r)
        return rules
    }

    /// `NAME: { require: { … } }` per method, tool, resource or prompt. `resources`: each URI
    /// is kept in the form a call's is compared in (ResourceURI), so that a rule written in
    /// any spelling holds for every spelling of its resource.
    static func mcpTable(_ node: Node, path p: String, resources: Bool = false, _ r: ConfigReader)
        -> [String: AuthorizationRequirement]
    {
        guard let table = r.mapping(node, path: p, section: nil) else { return [:] }
        var out: [String: AuthorizationRequirement] = [:]
        var spelled: [String: String] = [:]
        for (written, value) in table {
            let ep = "\(p).\(written)"
            if written.isEmpty {
                r.problem(ep, value, "needs a name")
                continue
            }
            var name = written
            if resources {
                switch ResourceURI.normalized(written) {
                case .success(let uri): name = uri
                case .failure(let refusal):
                    r.problem(ep, value, "a resource URI no call could name: \(refusal)")
                    continue
                }
                if let other = spelled[name] {
                    r.problem(ep, value, "the same resource as \(other) (both are \(name))")
                    continue
                }
                spelled[name] = written
            }
            guard let entry = r.mapping(value, path: ep, section: .mcpRule) else { continue }
            var requirement: AuthorizationRequirement?
            MCPRules.entryKeyTable.read(entry, into: &requirement, path: ep, r)
            guard let requirement else {
                r.problem(ep, value, "needs require: the scopes or claims a call needs")
                continue
            }
            out[name] = requirement
        }
        return out
    }
}
