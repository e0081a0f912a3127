import Reactor

/// The calls an ingress makes in decision mode, as the gateway's own endpoints: found by their
/// exact target (not normalized: only the configured path is an endpoint) before the request
/// is routed (`RouteEntry`), and answered on the decision built-in route
/// (`OwnRoutes.decision`) by a content stage that judges the request the call describes.
enum DecisionCalls {
    /// The decision endpoint `target` (as received) names, if `decision` has one. Asked only
    /// with decision mode on (`RouteEntry`).
    static func match(_ target: String, _ decision: DecisionConfig) -> OwnEndpoint? {
        if decision.extAuthzGRPC, target == ExtAuthzService.checkPath { return .extAuthzCheck }
        return DecisionEndpoint.kind(target, decision).map { .decision($0) }
    }
}

/// The content of a decision call in one of the HTTP forms (nginx `auth_request`, forward
/// auth, Envoy's HTTP ext_authz): the verdict of the described request's route.
final class DecisionCallStage: Stage {
    let kind: DecisionEndpoint.DecisionKind

    init(_ kind: DecisionEndpoint.DecisionKind) {
        self.kind = kind
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        let verdict = request.forwarding.policy.ownRoutes.verdict
        DecisionEndpoint(services: request.services, verdict: verdict).decide(
            request.exchange, kind, forwarded: ctx.forwarded, trusted: request.forwarding.peerTrusted, ctx: ctx)
        return .suspend
    }
}

/// The content of an ext_authz `Check` call over gRPC: its `CheckResponse`.
final class ExtAuthzCheckStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        let verdict = request.forwarding.policy.ownRoutes.extAuthzVerdict
        ExtAuthzService(services: request.services, verdict: verdict).serve(
            request.exchange, ctx: request.context, trusted: request.forwarding.peerTrusted)
        return .suspend
    }
}
