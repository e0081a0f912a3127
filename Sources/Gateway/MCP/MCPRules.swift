import OAuth

/// An MCP route's rules (`mcp:` on a `bearer`, `dpop` or `token` route): what a call needs
/// beyond the route's own `require`, by method and by the tool, resource or prompt it names.
/// The route's requirement admits the request first; these rules then judge the JSON-RPC
/// message in its body (`MCPMessage`), before the upstream hears of it.
struct MCPRules: Sendable {
    /// The most of a POST body the gateway reads to judge it (`max_request_bytes`); past it 413.
    var maxRequestBytes = 1 << 20
    /// Whether a tool, resource or prompt that no rule names may be called (`default: allow`)
    /// or is refused (`default: deny`). Methods are not affected: an unlisted method needs
    /// only the route's requirement (`initialize`, `ping` and notifications must pass).
    var allowsUnlisted = true
    var methods: [String: AuthorizationRequirement] = [:]
    var tools: [String: AuthorizationRequirement] = [:]
    var resources: [String: AuthorizationRequirement] = [:]
    var prompts: [String: AuthorizationRequirement] = [:]

    /// What a message needs: the requirements to meet (its method's, then its target's), or
    /// why it is refused whatever the token holds.
    enum Verdict: Equatable {
        case check([AuthorizationRequirement])
        case notAllowed(MCPTarget)
    }

    func verdict(for message: MCPMessage) -> Verdict {
        var needs: [AuthorizationRequirement] = []
        if let method = message.method, let rule = methods[method] { needs.append(rule) }
        guard let target = message.target else { return .check(needs) }
        let rule: AuthorizationRequirement?
        switch target {
        case .tool(let name): rule = tools[name]
        case .resource(let uri): rule = resources[uri]
        case .prompt(let name): rule = prompts[name]
        }
        guard let rule else { return allowsUnlisted ? .check(needs) : .notAllowed(target) }
        needs.append(rule)
        return .check(needs)
    }

    /// Every rule, methods first, each table by name: with the route's requirement, where
    /// the Protected Resource Metadata's `scopes_supported` comes from (RFC 9728 §2).
    var allRequirements: [AuthorizationRequirement] {
        [methods, tools, resources, prompts].flatMap { table in table.sorted { $0.key < $1.key }.map(\.value) }
    }
}
