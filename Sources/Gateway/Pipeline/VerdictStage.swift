import Reactor

/// The last stage of a decision (nginx `auth_request`, Traefik and Caddy forward auth, Envoy's
/// HTTP ext_authz): the request was admitted, so the ingress gets the allowed verdict with the
/// identity headers it copies onto the request it proxies itself.
final class VerdictStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        guard case .verdict(let original) = request.context.kind else {
            preconditionFailure("a verdict ends a decision's chain")
        }
        let admission = request.admitted
        // Made once per worker, so it reads the config in force (the core, on the request).
        let config = request.services.config
        let head = request.head
        let token = DecisionVerdict.forwardedToken(route: request.plan.route, admission: admission, head: head)
        admission.identity = admission.verdictIdentity(
            method: original.method, scheme: original.scheme, host: original.host, target: original.target)
        return .answer(
            DecisionVerdict.allowed(
                status: config.decision.allowStatus, admission: admission, accessToken: token,
                upstreamCookie: DecisionVerdict.upstreamCookie(head, own: config.ownCookieNames),
                responseHeaders: request.context.response.added))
    }
}
