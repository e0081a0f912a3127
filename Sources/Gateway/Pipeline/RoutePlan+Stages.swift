/// A route's chain, made once per config: which stages a request on it passes, in order.
/// A new capability is a stage, named here where it belongs in the order (docs/architecture.md,
/// "Adding a stage").
extension RoutePlan {
    /// `decision`: the chain of a decision about a request on this route (nothing goes
    /// upstream; the verdict stage follows); else the chain of a proxied request.
    func stages(_ services: WorkerServices, decision: Bool) -> [any Stage] {
        let keyed = services.modules.catalog
        var chain: [any Stage] = []
        // A WebSocket upgrade is refused or counted before anything is done for it.
        if !decision { chain.append(UpgradeStage(tunnels: services.proxying.tunnels)) }
        chain += keyed.stages(at: .beforeAuthentication, self, services, decision: decision)
        // Authentication: one stage admits the request (or answers it).
        if route.options.cors.preflight { chain.append(CORSPreflightStage(route: route)) }
        chain.append(authentication(services))
        // After admission: what the route checks or changes on an admitted request.
        chain += keyed.stages(at: .afterAuthentication, self, services, decision: decision)
        if decision { return chain + keyed.stages(at: .beforeUpstream, self, services, decision: true) }
        chain += keyed.stages(at: .beforeUpstream, self, services, decision: decision)
        // Toward the upstream: the request made, its body read, room on the pool, the call.
        if let pool {
            chain.append(GRPCDeadlineStage(plan: self))
            chain.append(RequestBufferingStage(budget: services.proxying.requestSpoolBudget, plan: self, pool: pool))
            chain += keyed.stages(at: .afterBody, self, services, decision: false)
            chain.append(UpstreamQueueStage(pool: pool))
            chain.append(ProxyStage(plan: self, pool: pool))
        }
        return chain
    }

    private func authentication(_ services: WorkerServices) -> any Stage {
        switch route.options.auth {
        case .none:
            return PublicRouteStage()
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
