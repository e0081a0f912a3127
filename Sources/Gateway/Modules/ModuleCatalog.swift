import Yams

/// The modules a gateway runs with (`GatewayModule`): the parser reads their keys and runs
/// their steps, the process keeps their shared parts, each worker makes their services, and
/// route plans take their stages. A parsed config carries the catalog it was read with
/// (`GatewayConfig.modules`), so the workers that run it make the same modules' services.
struct ModuleCatalog: Sendable {
    let modules: [any GatewayModule.Type]

    /// The gateway's own capabilities that are modules, in the order their stages run at one
    /// position: after admission, the limits, a signature and the policy before the MCP call is
    /// judged; before the upstream, a token exchanged and the upstream's own credential added
    /// before the last limits and policy asked of a call. A module that uses another's service
    /// comes after it.
    static let gateway = ModuleCatalog(modules: [
        TokenExchangeModule.self, UpstreamCredentialsModule.self, IdentityAssertionsModule.self, RateLimits.self,
        Signatures.self, Authorizers.self, MCPModule.self, ResponseSigning.self, APIKeys.self, SharedSignals.self,
        AuthorizationServer.self
    ])

    private init(modules: [any GatewayModule.Type]) { self.modules = modules }

    /// The gateway's modules and `more` after them (a module in a test target, or a build's
    /// own): the core never asks for a module that is not in `.gateway`, so a catalog only
    /// grows from it.
    func adding(_ more: any GatewayModule.Type...) -> ModuleCatalog { ModuleCatalog(modules: modules + more) }

    /// Their keyed stages, in catalog order.
    var stages: [any ModuleStage.Type] { modules.flatMap { $0.stages } }

    /// Their stages' route keys, for the parser: a route accepts them beside
    /// `RouteConfig.keyTable`'s.
    var routeKeys: ConfigKeyTable<RouteConfig, RouteKeyContext> {
        ConfigKeyTable(stages.compactMap { ($0 as? any KeyedStage.Type)?.routeKey })
    }

    /// Their top-level keys' reference rows.
    var topKeyDocs: [ConfigKeyDoc] { modules.compactMap { $0.key } }

    /// The sections below their keys.
    var sections: [ConfigSection] { modules.flatMap { $0.sections } }

    /// Their steps of one kind, in catalog order.
    func steps(_ kind: ConfigStep.Kind) -> [ConfigStep] {
        modules.flatMap { $0.steps }.filter { $0.kind == kind }
    }

    /// Reads each module's key present in `top` that is read at `point` into `cfg`; then what
    /// each module read there derives, key or none.
    func read(_ top: [String: Node], at point: ModuleReadPoint, into cfg: inout GatewayConfig, _ r: ConfigReader) {
        if point == .afterIssuers { cfg.modules = ModuleConfigs(catalog: self) }
        for module in modules where module.readAt == point { Self.read(module, top, into: &cfg, r) }
    }

    private static func read<M: GatewayModule>(
        _ module: M.Type, _ top: [String: Node], into cfg: inout GatewayConfig, _ r: ConfigReader
    ) {
        if let name = module.key?.name, let node = top[name] { cfg[module: module] = module.read(node, cfg, r) }
        module.derive(&cfg, top, r)
    }

    /// Their endpoints under `config`, by path (the first module's, should two name one path:
    /// the config's checks keep them apart).
    func endpoints(_ config: GatewayConfig) -> [String: ModuleEndpoint] {
        modules.reduce(into: [:]) { all, module in all.merge(module.endpoints(config)) { first, _ in first } }
    }

    /// Their endpoints' built-in routes, by id.
    func routes(_ config: GatewayConfig) -> [String: RouteConfig] {
        modules.reduce(into: [:]) { all, module in all.merge(module.routes(config)) { first, _ in first } }
    }

    /// The stages at `position` that this route's plan has.
    func stages(at position: StagePosition, _ plan: RoutePlan, _ services: WorkerServices, decision: Bool)
        -> [any Stage]
    {
        stages.filter { $0.positions.contains(position) && (!decision || $0.judgesDecisions) }.compactMap {
            $0.make(plan, services, at: position, decision: decision)
        }
    }
}
