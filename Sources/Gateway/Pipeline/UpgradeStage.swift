import Reactor

/// A WebSocket upgrade request (RFC 6455 §4.1), the first stage of every proxied request's
/// chain: refused before anything else is done for it when its route does not allow it, its
/// shape is wrong or the tunnel cap is reached; else the request becomes an upgrade, counted
/// as pending until it is answered.
final class UpgradeStage: Stage {
    /// Unowned: the services hold the plans that hold their stages; a request in its chain
    /// holds the services.
    unowned(unsafe) let services: WorkerServices
    let route: RouteConfig

    init(services: WorkerServices, route: RouteConfig) {
        self.services = services
        self.route = route
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ex = request.exchange
        guard UpgradeExchange.asksWebSocket(ex.head) else { return .proceed }
        if let refusal = services.proxying.tunnels.refusal(ex, route: route, ctx: request.context) {
            return .answer(refusal, close: true)
        }
        request.context.kind = .upgrade
        services.proxying.tunnels.pending(ex)
        return .proceed
    }
}
