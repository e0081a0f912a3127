import Reactor

/// A proxied request toward an upstream with `credentials`: the upstream's own credential is
/// added, after admission and any token exchange, before the request is built (so a signed
/// request covers it when `components` lists it). The client's copy of the field never goes
/// (RoutePlan.ownedFields). A token that cannot be had is a 503: the request never goes
/// without its credential.
final class UpstreamCredentialStage: ModuleStage {
    static let position = StagePosition.beforeUpstream
    /// Nothing goes upstream from a decision.
    static var judgesDecisions: Bool { false }

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> UpstreamCredentialStage? {
        guard let upstream = plan.upstream?.config, let credentials = upstream.credentials else { return nil }
        return UpstreamCredentialStage(
            credentialsOfUpstreams: services.upstreamCredentials, upstream: upstream,
            credentials: credentials)
    }

    /// This worker's secrets and token sources (the module's service; the services hold it
    /// and the plans that hold their stages).
    unowned(unsafe) let credentialsOfUpstreams: UpstreamCredentials
    let upstream: String
    let credentials: UpstreamCredentialsConfig
    /// The most a request waits for a token: the call bound, or the upstream's `timeout` when
    /// that is shorter.
    let wait: Double

    init(
        credentialsOfUpstreams: UpstreamCredentials, upstream: UpstreamConfig,
        credentials: UpstreamCredentialsConfig
    ) {
        self.credentialsOfUpstreams = credentialsOfUpstreams
        self.upstream = upstream.name
        self.credentials = credentials
        wait = min(CallBounds.tokenExchange.total, upstream.timeout)
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let admission = request.admitted
        switch credentials {
        case .header(let header):
            let value = credentialsOfUpstreams.secret(for: upstream, loaded: header.value)
            admission.identity.append((header.name, value))
            return .proceed
        case .clientCredentials:
            let ctx = request.context
            guard let source = credentialsOfUpstreams.source(for: upstream) else {
                return .answer(unavailable(ctx, detail: "no token source for upstream \(upstream)"))
            }
            if let token = source.current {
                admission.identity.append(("Authorization", "Bearer " + token))
                ctx.response.install(UpstreamTokenWatch(source: source, token: token))
                return .proceed
            }
            source.get(timeout: wait) { [self] result in
                switch result {
                case .success(let token):
                    admission.identity.append(("Authorization", "Bearer " + token))
                    ctx.response.install(UpstreamTokenWatch(source: source, token: token))
                    request.resume()
                case .failure(let why):
                    request.answer(unavailable(ctx, detail: "upstream \(upstream) credentials: \(why)"))
                }
            }
            return .suspend
        }
    }

    /// 503 with `Retry-After` (RFC 9110 §15.6.4): the gateway, not the caller, is short of
    /// what the upstream needs.
    private func unavailable(_ ctx: RequestContext, detail: String) -> GatewayResponse {
        ctx.rejection = .unavailable(.upstreamCredentialUnavailable)
        return ErrorResponse.make(
            503, error: "temporarily_unavailable",
            description: "the gateway cannot get a credential for the upstream right now",
            requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: detail)
    }
}

/// Watches the upstream's answer to the gateway's own token: a 401 whose Bearer challenge says
/// `invalid_token` (RFC 6750 §3.1) has the token replaced (`ClientCredentialsToken.replace`),
/// so a revoked token or rotated keys do not refuse every request until it expires.
final class UpstreamTokenWatch: ResponseStage {
    let source: ClientCredentialsToken
    let token: String

    init(source: ClientCredentialsToken, token: String) {
        self.source = source
        self.token = token
        super.init(position: .content)
    }

    override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        if head.status == 401, Self.saysInvalidToken(head) { source.replace(token) }
        next.head(head, bodyLength: bodyLength)
    }

    static func saysInvalidToken(_ head: HTTPResponseHead) -> Bool {
        let values = (head.forwarded?.fields.values("WWW-Authenticate") ?? []) + head.fields.values("WWW-Authenticate")
        return values.contains { v in
            let text = v.lowercased()
            return text.hasPrefix("bearer") && text.contains("invalid_token")
        }
    }

}
