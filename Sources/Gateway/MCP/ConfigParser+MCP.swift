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
        guard ConfigValidation.mcp(m, route: route, auth: auth, r) else { return nil }
        guard let section = r.mapping(node, path: p, section: .mcp) else { return nil }
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
            guard let n = entry["require"] else {
                r.problem(ep, value, "needs require: the scopes or claims a call needs")
                continue
            }
            let requirement = requirement(n, path: "\(ep).require", r)
            if requirement.hasStepUp {
                r.problem(
                    "\(ep).require", n, "acr and max_age apply to the whole route: put them in the route's require")
            }
            out[name] = requirement
        }
        return out
    }
}
