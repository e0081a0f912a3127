import Reactor

/// The last stage of an ext_authz `Check` (gRPC): the request it describes was admitted, so
/// Envoy gets an OK `CheckResponse` with the header changes it applies: the identity headers
/// set, and what only a trusted proxy may send removed (the client is none).
final class ExtAuthzVerdictStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        guard case .extAuthz(let check) = request.context.kind else {
            preconditionFailure("a CheckResponse ends an ext_authz chain")
        }
        let a = check.attributes
        let admission = request.admitted
        let rule = request.forwarding.clientFieldRule(
            listed: [], session: admission.dropsCredential, preflight: admission.preflight, peerTrusted: false)
        let identity = admission.verdictIdentity(method: a.method, scheme: a.scheme, host: a.host, target: a.path)
        let verdict = CheckVerdict.allowed(
            identity: identity, fields: a.fields, rule: rule, responseFields: request.context.response.added)
        ExtAuthzAnswer(services: request.services).sendCheckResponse(
            request.exchange, request.context, verdict, logStatus: 200, detail: "decision: allowed", reason: nil)
        return .suspend
    }
}
