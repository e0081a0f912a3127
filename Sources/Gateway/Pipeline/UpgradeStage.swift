import Reactor

/// A WebSocket upgrade request (RFC 6455 §4.1), the first stage of every proxied request's
/// chain: refused before anything else is done for it when its route does not allow it, its
/// shape is wrong or the tunnel cap is reached; else the request becomes an upgrade, counted
/// as pending until it is answered.
final class UpgradeStage: Stage {
    /// This worker's open tunnels (its proxying part; held by the services, which hold the
    /// plans that hold their stages).
    unowned(unsafe) let tunnels: Tunnels

    /// The route is read from the request's plan, on an upgrade only: a copy per stage was a
    /// quarter of a kilobyte a route.
    init(tunnels: Tunnels) {
        self.tunnels = tunnels
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ex = request.exchange
        guard UpgradeExchange.asksWebSocket(ex.head) else { return .proceed }
        if let refusal = tunnels.refusal(ex, route: request.plan.route, ctx: request.context) {
            return .answer(refusal, close: true)
        }
        request.context.kind = .upgrade
        tunnels.pending(ex)
        return .proceed
    }
}
