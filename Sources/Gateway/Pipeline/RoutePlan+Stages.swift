/// A route's chain, made once per config: which stages a request on it passes, in order.
/// A new capability is a stage, named here where it belongs in the order (docs/architecture.md,
/// "Adding a stage").
extension RoutePlan {
    /// `decision`: the chain of a decision about a request on this route (nothing goes
    /// upstream; the verdict stage follows); else the chain of a proxied request.
    /// `sharing`: the stages and chains the plans of one config share on the worker.
    func stages(_ services: WorkerServices, decision: Bool, sharing: StageSharing) -> [any Stage] {
        let keyed = services.modules.catalog
        var chain: [any Stage] = []
        // A WebSocket upgrade is refused or counted before anything is done for it.
        if !decision { chain.append(sharing.stage(.upgrade) { UpgradeStage(tunnels: services.proxying.tunnels) }) }
        chain += keyed.stages(at: .beforeAuthentication, self, services, decision: decision)
        // Authentication: one stage admits the request (or answers it).
        if route.options.cors.preflight { chain.append(CORSPreflightStage(route: route)) }
        chain.append(authentication(services, sharing))
        // After admission: what the route checks or changes on an admitted request.
        chain += keyed.stages(at: .afterAuthentication, self, services, decision: decision)
        if decision { return chain + keyed.stages(at: .beforeUpstream, self, services, decision: true) }
        chain += keyed.stages(at: .beforeUpstream, self, services, decision: decision)
        // Toward the upstream: the request made, its body read, room on the pool, the call.
        if let pool {
            let id = ObjectIdentifier(pool)
            let options = route.options.buffering
            chain.append(
                sharing.stage(.grpcDeadline(cap: upstream?.config.timeout ?? .infinity)) {
                    GRPCDeadlineStage(plan: self)
                })
            chain.append(
                sharing.stage(.buffering(pool: id, buffers: options.request)) {
                    RequestBufferingStage(budget: services.proxying.requestSpoolBudget, plan: self, pool: pool)
                })
            chain += keyed.stages(at: .afterBody, self, services, decision: false)
            chain.append(sharing.stage(.queue(pool: id)) { UpstreamQueueStage(pool: pool) })
            chain.append(
                sharing.stage(.proxy(pool: id, buffersResponse: options.response)) {
                    ProxyStage(plan: self, pool: pool)
                })
        }
        return chain
    }

    private func authentication(_ services: WorkerServices, _ sharing: StageSharing) -> any Stage {
        switch route.options.auth {
        case .none:
            return sharing.stage(.publicRoute) { PublicRouteStage() }
        case .login(let loginRoute):
            return SessionStage.make(services, route: route, loginRoute: loginRoute)
        case .tokens(let tokenRoute):
            return TokenStage.make(services, route: route, tokens: tokenRoute, rules: tokenRules)
        case .loginOrToken(let loginRoute, let tokenRoute):
            return TokenStage.make(
                services, route: route, tokens: tokenRoute, rules: tokenRules,
                session: SessionStage.make(services, route: route, loginRoute: loginRoute))
        }
    }

    private var tokenRules: TokenRoutePlan {
        guard let tokens else { preconditionFailure("a token route's plan has its token rules") }
        return tokens
    }
}

/// What the route plans of one config share on a worker. A stage that depends only on a few
/// values (the upstream pool, a route flag) is made once per such value, and a chain once per
/// list of stages: at 10,000 routes to one upstream, the plans made 20,000 arrays and 60,000
/// stage objects of a few shapes. Stages hold no request's state, so routes may share them
/// as requests on one route do. Made by `Worker.apply`, for one config.
final class StageSharing {
    /// A stage shared by every plan that would make it alike.
    enum Key: Hashable {
        case upgrade
        case publicRoute
        case grpcDeadline(cap: Double)
        case buffering(pool: ObjectIdentifier, buffers: Bool)
        case queue(pool: ObjectIdentifier)
        case proxy(pool: ObjectIdentifier, buffersResponse: Bool)
    }

    private var stages: [Key: any Stage] = [:]
    private var chains: [[ObjectIdentifier]: (stages: [any Stage], links: [StageLink])] = [:]

    func stage(_ key: Key, _ make: () -> any Stage) -> any Stage {
        if let stage = stages[key] { return stage }
        let stage = make()
        stages[key] = stage
        return stage
    }

    /// The chain of `stages`, with its links: one array for every plan whose chain lists the
    /// same stage objects.
    func chain(_ stages: [any Stage]) -> (stages: [any Stage], links: [StageLink]) {
        let key = stages.map { ObjectIdentifier($0) }
        if let chain = chains[key] { return chain }
        let chain = (stages: stages, links: stages.map(StageLink.init))
        chains[key] = chain
        return chain
    }
}
