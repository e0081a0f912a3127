/// MCP routes as a module (`mcp:` on token routes): the route option's sections, the decision
/// body limit its calls need, each worker's count of calls by route, method and outcome, and
/// `MCPStage` (`MCPDecisionStage` in a decision's chain) after the route's authentication,
/// limits and policy. The route key is read with the route's `auth` (it needs a token route).
enum MCPModule: GatewayModule {
    static let sections = [ConfigSection.mcp, .mcpRule]
    static let stages: [any ModuleStage.Type] = [MCPStage.self]
    static let steps = [
        ConfigStep("decision body limit", .derive) { cfg, _, _ in
            // A decision may read an MCP call's body: as much as the largest MCP route takes.
            cfg.decision.maxBodyBytes =
                cfg.routes.compactMap { $0.options.auth.tokenRoute?.mcp?.maxRequestBytes }.max() ?? 0
        }
    ]

    static func makeService(_ shared: NoModuleShared, _ context: ModuleContext) -> MCPCalls { MCPCalls() }
}

/// One worker's MCP calls, by route, method and outcome. Loop-thread only.
final class MCPCalls: ModuleService {
    private(set) var metrics = MCPCallMetrics()

    func record(route: String, method: String?, _ outcome: MCPCallMetrics.Outcome) {
        metrics.record(route: route, method: method, outcome)
    }

    func apply(_ config: GatewayConfig) {}
}

extension MCPCallMetrics: ModuleMetrics {}

extension ConfigSection {
    static let mcp = ConfigSection("routes[].mcp") { MCPRules.keyTable.docs }
    /// An entry of `mcp.methods`, `mcp.tools`, `mcp.resources` or `mcp.prompts` (same keys).
    static let mcpRule = ConfigSection("routes[].mcp.tools.NAME") { MCPRules.entryKeyTable.docs }
}
