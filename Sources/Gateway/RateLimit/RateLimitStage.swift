import Foundation
import JOSE
import Reactor

/// A route's rate limits at one place in its chain (`rate_limit`): each policy whose key
/// counts here takes one request from the budget of the caller's key value, in the order
/// the route lists them; the first that refuses answers 429 with `Retry-After`, and the
/// upstream never hears of the request. Allowed requests carry the policy with the least
/// left in `RateLimit-Policy` and `RateLimit` on their answer (for policies with
/// `headers: true`). `ip` and `header` policies count before authentication, identity
/// policies after it, `tool` after the MCP stage has read the call.
final class RateLimitStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>(
        "rate_limit", type: "name of a `rate_limits` entry, or a list", default: "none"
    ) { route, node, path, context in
        ConfigParser.routeRateLimits(&route, node, path: path, context)
    }
    /// A route's setting of this stage: its rate-limit policies (`RouteOptions.settings`).
    enum Settings: RouteSettingKey { typealias Value = [RateLimitPolicy] }
    static let position = StagePosition.afterAuthentication
    static let positions: [StagePosition] = [.beforeAuthentication, .afterAuthentication, .beforeUpstream]

    static func make(_ plan: RoutePlan, _ services: WorkerServices, at position: StagePosition) -> RateLimitStage? {
        guard let all = plan.route.options.settings[Settings.self] else { return nil }
        let config = services.config
        let vouchers = plan.route.options.auth.vouchers(clients: config.clients)
        // A key set vouches for its keys' callers as an issuer for its tokens' (`SET/VALUE`).
        let issuers = Set(config.issuers.keys).union(config.apiKeySets.keys)
        let here = all.filter { $0.key.position == position }.map { $0.onRoute(vouchers: vouchers, issuers: issuers) }
        return here.isEmpty ? nil : RateLimitStage(policies: here, limiter: services.rateLimits)
    }

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> RateLimitStage? {
        make(plan, services, at: position)
    }

    let policies: [RateLimitPolicy]
    /// This worker's limiter (the module's service; the services hold it and the plans that
    /// hold their stages).
    unowned(unsafe) let limiter: RateLimiter

    init(policies: [RateLimitPolicy], limiter: RateLimiter) {
        self.policies = policies
        self.limiter = limiter
    }

    /// The allowing policy with the least left, for the answer's fields.
    typealias Tightest = (policy: RateLimitPolicy, rule: RateLimitRule, decision: GCRA.Decision)

    func run(_ request: RoutedRequest) -> StageOutcome {
        guard limiter.answersAtOnce else { return RateLimitCheck(stage: self, request: request).next() }
        // The memory store answers within the call: nothing to keep while waiting.
        var tightest: Tightest?
        for policy in policies {
            let partition = self.partition(policy, request)
            if let refusal = judge(limiter.takeNow(partition), policy, partition, request, &tightest) { return refusal }
        }
        return allowed(request, tightest)
    }

    /// Where `request` counts under `policy`. A request admitted with its connection's token
    /// memo whose key the token fixes counts where the memo's first request did: its value
    /// is not built again.
    func partition(_ policy: RateLimitPolicy, _ request: RoutedRequest) -> RateLimitPartition {
        let memo = request.admission?.bearerMemo
        if let memo, policy.key.fixedByToken, let known = limiter.knownPartition(policy, memo: memo) { return known }
        return limiter.partition(policy, value: value(policy.key, request), memo: memo)
    }

    /// Every policy allowed: the tightest one's fields go on the answer.
    func allowed(_ request: RoutedRequest, _ tightest: Tightest?) -> StageOutcome {
        if let t = tightest {
            RateLimitFields.append(t.policy, rule: t.rule, t.decision, to: &request.context.response.added)
        }
        return .proceed
    }

    /// The value of `key` for this request; "" when the request has none (one budget for
    /// every request without it, so leaving a claim or header out is no way around it). An
    /// identity key's value carries its issuer (`RateLimitKey.namesCaller`).
    func value(_ key: RateLimitKey, _ request: RoutedRequest) -> String {
        let admission = request.admission
        switch key {
        case .subject: return vouched(request, request.context.caller?.subject ?? admission?.claims["sub"]?.string)
        case .clientID: return vouched(request, request.context.caller?.clientID)
        case .jkt: return admission?.token?.jkt ?? ""
        case .certificate:
            guard !request.isDecision, let certificate = request.exchange.connection.clientCertificate else {
                return ""
            }
            return Base64URL.encode(certificate.sha256)  // x5t#S256's form (RFC 8705 §3.1)
        case .ip:
            // A decision's origin is what the ingress (a trusted proxy) reported.
            return ClientAddress.of(
                request.origin, peerTrusted: request.isDecision || request.context.behindTrustedProxy,
                trustedProxies: request.services.config.trustedProxies)
        case .claim(let path):
            var value: JSONValue? = admission.map { JSONValue.object($0.claims) }
            for name in path { value = value?.object?[name] }
            switch value {
            case .string(let s): return vouched(request, s)
            case .number(let n): return vouched(request, n)
            case .bool(let b): return vouched(request, b ? "true" : "false")
            default: return ""
            }
        case .header(let name): return request.head.fields.first(name) ?? ""
        case .tool:
            guard let tool = request.context.mcpCall?.tool else { return "" }
            return tool + "\u{0}" + value(.subject, request)
        }
    }

    /// The value as the issuer that vouched for the caller said it (`RateLimitPolicy.key`);
    /// "" for no value.
    func vouched(_ request: RoutedRequest, _ value: String?) -> String {
        guard let value, !value.isEmpty else { return "" }
        return RateLimitPolicy.key(request.context.caller?.issuer ?? "", value[...])
    }
}

/// One request's pass through its stage's policies: in order, each at once (memory) or when
/// the store answers (Redis), which suspends the chain meanwhile.
private final class RateLimitCheck {
    let stage: RateLimitStage
    let request: RoutedRequest
    var index = 0
    var tightest: RateLimitStage.Tightest?
    var waiting = false
    var suspended = false
    var immediate: Result<GCRA.Decision, RateLimitStoreError>?

    init(stage: RateLimitStage, request: RoutedRequest) {
        self.stage = stage
        self.request = request
    }

    /// Runs the policies from `index` on until one must wait, refuses, or all allowed.
    func next() -> StageOutcome {
        while index < stage.policies.count {
            let policy = stage.policies[index]
            let partition = stage.partition(policy, request)
            waiting = true
            immediate = nil
            stage.limiter.take(partition) { [self] result in
                if waiting {
                    immediate = result
                } else {
                    resumed(result, partition)
                }
            }
            waiting = false
            guard let result = immediate else {
                suspended = true
                return .suspend
            }
            if let refusal = stage.judge(result, policy, partition, request, &tightest) { return refusal }
            index += 1
        }
        return stage.allowed(request, tightest)
    }

    private func resumed(_ result: Result<GCRA.Decision, RateLimitStoreError>, _ partition: RateLimitPartition) {
        if let refusal = stage.judge(result, stage.policies[index], partition, request, &tightest) {
            finish(refusal)
            return
        }
        index += 1
        finish(next())
    }

    private func finish(_ outcome: StageOutcome) {
        switch outcome {
        case .proceed: request.resume()
        case .answer(let response, let close): request.answer(response, close: close)
        case .suspend: break
        }
    }
}

extension RateLimitStage {
    /// nil: the policy allowed (or its store failed open); else the answer.
    func judge(
        _ result: Result<GCRA.Decision, RateLimitStoreError>, _ policy: RateLimitPolicy,
        _ partition: RateLimitPartition, _ request: RoutedRequest, _ tightest: inout Tightest?
    ) -> StageOutcome? {
        let ctx = request.context
        switch result {
        case .failure(let error):
            limiter.storeFailed(error, policy: policy.name, now: request.services.clock())
            guard policy.onStoreFailure == .failClosed else { return nil }
            var r = ErrorResponse.make(
                503, error: "temporarily_unavailable", description: "the rate limit cannot be checked now",
                requestID: ctx.requestID, headers: [("Retry-After", "1")],
                detail: "rate_limit \(policy.name): store failed")
            r.reason = "rate_limit_store_failed"
            return .answer(r)
        case .success(let decision):
            let rule = partition.rule
            if decision.allowed {
                if policy.headers, tightest.map({ decision.remaining < $0.decision.remaining }) ?? true {
                    tightest = (policy, rule, decision)
                }
                return nil
            }
            limiter.countRefusal(route: ctx.route, policy: policy.name)
            ctx.state[RateLimitRefusal.Key.self] = RateLimitRefusal(policy: policy.name)
            var headers = [("Retry-After", String(RateLimitFields.retryAfter(decision)))]
            if policy.headers { RateLimitFields.append(policy, rule: rule, decision, to: &headers) }
            var r = ErrorResponse.make(
                429, error: "rate_limited", description: "too many requests; try again after Retry-After seconds",
                requestID: ctx.requestID, headers: headers, detail: "rate_limit \(policy.name): over its limit")
            r.reason = "rate_limited"
            return .answer(r)
        }
    }
}
