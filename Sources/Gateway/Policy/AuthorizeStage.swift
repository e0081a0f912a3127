import Foundation
import JOSE
import Logging
import Reactor
import Yams

/// A route's `authorize: NAME`: once the request is authenticated, its PDP (OpenID AuthZEN
/// Authorization API 1.0) is asked whether this caller may do this to this route, and the
/// answer is obeyed. `true` goes on; `false` is 403 `access_denied`, with the PDP's
/// `reason_user` as its description when it gave one (its `reason_admin` goes to the log
/// only); no decision (an error status, a body without a boolean `decision`, a timeout, a
/// refused connection) takes the authorizer's `on_error`. Decisions are cached per process
/// (`PolicyDecisionCache`).
final class AuthorizeStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>(
        "authorize", type: "name of an `authorizers` entry", default: "none"
    ) { route, node, path, context in
        ConfigParser.routeAuthorizer(&route, node, path: path, context)
    }
    /// A route's setting of this stage: its authorizer (`RouteOptions.settings`).
    enum Settings: RouteSettingKey { typealias Value = AuthorizerConfig }
    static let position = StagePosition.afterAuthentication
    static let positions: [StagePosition] = [.afterAuthentication, .beforeUpstream]

    /// On an MCP route the tool a `tools/call` names is known only once the MCP stage has
    /// read the message: the PDP is asked then, about that tool.
    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition) -> AuthorizeStage? {
        guard let a = plan.route.options.settings[Settings.self] else { return nil }
        let here: StagePosition = plan.mcp != nil ? .beforeUpstream : .afterAuthentication
        return position == here
            ? AuthorizeStage(authorizer: a, points: services.policies) : nil
    }

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> AuthorizeStage? {
        make(plan, services, at: position)
    }

    let authorizer: AuthorizerConfig
    /// This worker's PDP clients (the module's service; the services hold it and the plans
    /// that hold their stages).
    unowned(unsafe) let points: PolicyDecisionPoints

    init(authorizer: AuthorizerConfig, points: PolicyDecisionPoints) {
        self.authorizer = authorizer
        self.points = points
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let admission = request.admitted
        // A preflight carries no credential: there is no caller to ask about.
        if admission.preflight { return .proceed }
        let ctx = request.context
        let (host, ip) = Self.hostAndAddress(request, request.services)
        // A connection's token asking again what it asked last (`KeptDecision`).
        let memo = ctx.mcpCall?.tool == nil ? admission.bearerMemo : nil
        let query = authorizer.query ? request.query ?? "" : nil
        if let kept = memo?.kept[KeptDecision.Key.self],
            kept.answers(
                authorizer: authorizer.name, method: ctx.method, host: host, path: ctx.path, query: query, ip: ip,
                now: points.now)
        {
            return judge(.success(kept.decision), cached: true, started: nil, request)
        }
        guard let evaluation = Self.evaluation(authorizer, request, admission, request.services, asked: (host, ip))
        else {
            note(ctx, .deny, micros: 0, cached: false)
            return .answer(
                ErrorResponse.make(
                    403, error: "access_denied", description: "the request is not allowed",
                    requestID: ctx.requestID,
                    detail: "authorize \(authorizer.name): the caller has no \(authorizer.subject.idClaim) claim"))
        }
        // The clock is read only when the request waits: a kept decision is answered at once.
        var started: Double?
        var waiting = true
        var immediate: StageOutcome?
        points.evaluate(authorizer, evaluation, requestID: ctx.requestID) { [self] result, keptUntil in
            if let memo, let keptUntil, case .success(let decision) = result {
                memo.kept[KeptDecision.Key.self] = KeptDecision(
                    authorizer: authorizer.name, method: ctx.method, host: host, path: ctx.path, query: query, ip: ip,
                    decision: decision, until: keptUntil)
            }
            let outcome = judge(result, cached: keptUntil != nil, started: started, request)
            if waiting {
                immediate = outcome
            } else {
                switch outcome {
                case .proceed: request.resume()
                case .answer(let response, let close): request.answer(response, close: close)
                case .suspend: break
                }
            }
        }
        waiting = false
        if immediate == nil { started = request.services.clock() }
        return immediate ?? .suspend
    }

    /// The AuthZEN request for this request (§6.1), or nil when the caller has no subject id.
    /// `action`: the action's name when it is not the request's method; `asked`: the
    /// request's `hostAndAddress`, when already read.
    static func evaluation(
        _ authorizer: AuthorizerConfig, _ request: RoutedRequest, _ admission: Admission, _ services: WorkerServices,
        action: String? = nil, asked: (host: String, ip: String)? = nil
    ) -> AuthZENEvaluation? {
        let claims = admission.claims
        guard let id = Self.text(claims[authorizer.subject.idClaim]), !id.isEmpty else { return nil }
        var subjectProperties = JSONObject()
        for name in authorizer.subject.properties {
            if let v = claims[name] { subjectProperties[name] = v }
        }
        let ctx = request.context
        // Who vouched for the subject (docs/policy.md): the same id from another issuer is
        // another caller, to the PDP and to the decision cache, whose digest covers it. The
        // credential's own verified `iss` (a template issuer's tenant), else its issuer's.
        if let iss = claims["iss"]?.string ?? ctx.caller?.issuer.flatMap({ services.config.issuers[$0]?.issuer }) {
            subjectProperties["iss"] = .string(iss)
        }
        let (host, ip) = asked ?? hostAndAddress(request, services)
        if action == nil, let tool = ctx.mcpCall?.tool {
            // An MCP `tools/call`: the question is the tool, as a tools/list's are
            // (ToolListDecisions), so a PDP that hides a tool also refuses its calls.
            return AuthZENEvaluation(
                authorizer: authorizer.name, subjectType: authorizer.subject.type, subjectID: id,
                subjectProperties: subjectProperties, action: "tools/call", resourceType: "mcp_tool", resourceID: tool,
                resourceProperties: [("route", ctx.route)], ip: ip, time: 0)
        }
        return AuthZENEvaluation(
            authorizer: authorizer.name, subjectType: authorizer.subject.type, subjectID: id,
            subjectProperties: subjectProperties,
            action: action ?? ctx.method, resourceID: request.routeTemplate ?? ctx.path,
            resourceProperties: [("route", ctx.route), ("host", host), ("path", ctx.path)]
                + (authorizer.query ? [("query", request.query ?? "")] : [])
                + request.pathParameters.list.map { ($0.name, $0.value) }, ip: ip, time: 0)
    }

    private func judge(
        _ result: Result<AuthZENDecision, AuthZENError>, cached: Bool, started: Double?, _ request: RoutedRequest
    ) -> StageOutcome {
        let ctx = request.context
        let micros = started.map { Int((request.services.clock() - $0) * 1e6) } ?? 0
        switch result {
        case .success(let d) where d.allowed:
            note(ctx, .allow, micros: micros, cached: cached)
            return .proceed
        case .success(let d):
            note(ctx, .deny, micros: micros, cached: cached)
            if let admin = d.reasonAdmin {
                request.services.log.info(
                    "policy decision: deny",
                    metadata: [
                        "request_id": "\(ctx.requestID)", "authorizer": "\(authorizer.name)", "reason_admin": "\(admin)"
                    ])
            }
            var r = ErrorResponse.make(
                403, error: "access_denied", description: d.reasonUser ?? "the policy does not allow this request",
                requestID: ctx.requestID, detail: "authorize \(authorizer.name): denied")
            r.reason = "policy_denied"
            return .answer(r)
        case .failure(let error):
            note(ctx, .error, micros: micros, cached: false)
            let detail = "authorize \(authorizer.name): \(error)"
            var r: GatewayResponse
            switch authorizer.onError {
            case .deny:
                r = ErrorResponse.make(
                    403, error: "access_denied", description: "the request could not be authorized",
                    requestID: ctx.requestID, detail: detail)
            case .unavailable:
                r = ErrorResponse.make(
                    503, error: "temporarily_unavailable", description: "the request cannot be authorized now",
                    requestID: ctx.requestID, headers: [("Retry-After", "1")], detail: detail)
            }
            r.reason = "policy_error"
            return .answer(r)
        }
    }

    private func note(_ ctx: RequestContext, _ outcome: AuthorizationNote.Outcome, micros: Int, cached: Bool) {
        ctx.state[AuthorizationNote.Key.self] = AuthorizationNote(
            authorizer: authorizer.name, outcome: outcome, micros: micros, cached: cached)
        points.record(authorizer.name, outcome: outcome, cached: cached, micros: micros)
    }

    /// The request's host (`resource.properties.host`) and its client's address
    /// (`context.ip_address`), as far as the gateway can trust them.
    static func hostAndAddress(_ request: RoutedRequest, _ services: WorkerServices) -> (host: String, ip: String) {
        let origin = request.origin
        let host = origin.forwardedHost ?? request.head.fields.first("host") ?? ""
        let ip = ClientAddress.of(
            origin, peerTrusted: request.isDecision || request.context.behindTrustedProxy,
            trustedProxies: services.config.trustedProxies)
        return (host, ip)
    }

    /// A claim as the subject's id: a string, or a number's text.
    static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s): s
        case .number(let n): n
        default: nil
        }
    }
}

/// What the authorizer decided for a request, for its access log line, span and metrics; in
/// the request's state.
final class AuthorizationNote {
    enum Key: RequestStateKey { typealias Value = AuthorizationNote }
    let authorizer: String
    enum Outcome: String { case allow, deny, error }
    let outcome: Outcome
    /// How long the request waited for the decision.
    let micros: Int
    /// Answered from the process's cache, with no PDP call.
    let cached: Bool

    init(authorizer: String, outcome: Outcome, micros: Int, cached: Bool) {
        self.authorizer = authorizer
        self.outcome = outcome
        self.micros = micros
        self.cached = cached
    }
}

extension ConfigParser {
    /// A route's `authorize`: the name of an authorizer defined under `authorizers`, on a
    /// route that authenticates its caller.
    static func routeAuthorizer(_ route: inout RouteConfig, _ node: Node, path p: String, _ context: RouteKeyContext) {
        let r = context.r
        guard let name = r.string(node, path: p) else { return }
        guard let a = context.cfg.authorizers[name] else {
            let defined = context.cfg.authorizers.keys.sorted().joined(separator: ", ")
            r.problem(
                p, node, "\"\(name)\" is not defined under authorizers; defined: \(defined.isEmpty ? "none" : defined)")
            return
        }
        guard context.auth != .none else {
            r.problem(p, node, "needs an authenticated caller: this route has auth: none")
            return
        }
        route.options.settings[AuthorizeStage.Settings.self] = a
    }
}
