import Reactor

/// What one route needs on the request path, built once per config (apply time): the
/// route, its upstream pool, its metrics id and its stages. The router's index picks it. A
/// class: the request path hands it on by reference (as a struct, every hand-off copied the
/// route).
final class RoutePlan {
    /// The route's config, shared with the other workers' plans for it.
    let shared: SharedRoute
    var route: RouteConfig { _read { yield shared.config } }
    let pool: UpstreamPool?
    let metricID: Int
    /// The route's upstream (shared by every plan that names it) and its Host authority,
    /// looked up and formatted once per config.
    let upstream: SharedUpstream?
    let upstreamAuthority: String

    /// What the request path reads of the route and its upstream on every request, taken
    /// out once (reading them through `route` and `upstream` copied those structs each time).
    let name: String
    let hostHeader: UpstreamConfig.HostHeader
    let basePath: String
    /// The route's `path_template`; nil on `path:` and `path_prefix:` routes, which then
    /// capture nothing and cost no template work per request.
    let template: PathTemplate?
    /// A token route's rules, made with the plan from the same config (a request keeps the
    /// plan it was routed by, even across a reload while its body arrives).
    let tokens: TokenRoutePlan?
    /// An MCP route's call rules (`mcp:`), read before a POST is forwarded.
    let mcp: MCPRules?
    /// The route's token exchange toward the upstream (`token_exchange:`), after admission:
    /// read when the plan's stage is made, so not kept (a kilobyte a plan).
    var exchange: TokenExchangeConfig? { route.options.auth.tokenRoute?.tokenExchange }
    /// Whether it has one: read per request, without copying the config out.
    let exchanges: Bool
    /// Whether the client's credential goes upstream: on a token route, its `forward_token`;
    /// never on `auth: login`, where a session authenticates. Taken out of the route once,
    /// as every proxied request asks (a `switch` over the route's auth copied its settings).
    let forwardsCredential: Bool
    /// Whether the client's DPoP proof goes upstream (`forward_proof`), on any route kind.
    let forwardsProof: Bool
    /// The client's fields the gateway owns on this route (lowercase), never forwarded: the
    /// ones its API keys come in, and the one its upstream's `credentials` go in.
    let ownedFields: [[UInt8]]
    /// `certificate_headers`: empty on almost every route, so the client certificate is
    /// not even looked at.
    let certificateHeaders: [(header: String, field: CertificateField)]
    /// The stages a proxied request on this route passes, in order (`RoutePlan+Stages`).
    private(set) var proxyStages: [any Stage] = []
    /// The stages a decision about a request on this route passes, before its verdict.
    private(set) var decisionStages: [any Stage] = []
    /// The same chains as the runner reads them (`RoutedRequest.resume`).
    private(set) var proxyChain: [StageLink] = []
    private(set) var decisionChain: [StageLink] = []

    init(
        route: SharedRoute, pool: UpstreamPool?, metricID: Int, upstream: SharedUpstream?,
        tokens: TokenRoutePlan? = nil, services: WorkerServices? = nil, sharing: StageSharing = StageSharing()
    ) {
        shared = route
        let route = route.config
        self.pool = pool
        self.metricID = metricID
        self.upstream = upstream
        upstreamAuthority = upstream?.config.authority ?? ""
        name = route.name
        hostHeader = upstream?.config.hostHeader ?? .upstream
        basePath = upstream?.config.basePath ?? ""
        template = route.match.path.template
        self.tokens = tokens
        mcp = route.options.auth.tokenRoute?.mcp
        exchanges = route.options.auth.tokenRoute?.tokenExchange != nil
        let credentials = upstream?.config.credentials
        switch route.options.auth {
        case .none: forwardsCredential = credentials?.replacesAuthorization != true
        case .login: forwardsCredential = false
        case .tokens(let tokens), .loginOrToken(_, let tokens):
            forwardsCredential = tokens.forwardToken && credentials?.replacesAuthorization != true
        }
        forwardsProof = route.options.auth.tokenRoute?.dpop?.forwardProof ?? false
        var owned = route.options.auth.tokenRoute?.apiKeys.fields ?? []
        if let credentials, !credentials.replacesAuthorization {
            let field = Array(credentials.fieldName.utf8)
            if !owned.contains(field) { owned.append(field) }
        }
        ownedFields = owned
        certificateHeaders = route.options.forwarding.certificateHeaders
        if let services {
            (proxyStages, proxyChain) = sharing.chain(stages(services, decision: false, sharing: sharing))
            (decisionStages, decisionChain) = sharing.chain(stages(services, decision: true, sharing: sharing))
        }
    }

    /// What the route's template captured from `path` (normalized, routed to this plan); nil on
    /// a route without a template.
    func parameters(in path: String) -> PathParameters? {
        guard let template else { return nil }
        // The router chose this route for this path, so the template matches it.
        return template.parameters(in: path) ?? .none
    }

    /// The path as it goes upstream: the upstream URL's path, then the request's (as the
    /// route forwards it, see `RouteOptions.forwardedPath`).
    func upstreamPath(_ path: String) -> String {
        let forwarded = route.options.forwarding.forwardedPath(path)
        return basePath.isEmpty ? forwarded : basePath + forwarded
    }
}

/// A route's config as its plans read it: one per route and config, shared by every worker's
/// plan for it (a copy in each plan was a quarter of a kilobyte, 5 MB at 10,000 routes on two
/// workers).
final class SharedRoute: Sendable {
    let config: RouteConfig

    init(_ config: RouteConfig) {
        self.config = config
    }
}

/// An upstream's config as route plans read it: one per upstream and config, shared by every
/// plan that names the upstream (a copy in each plan was half a kilobyte, 10 MB at 10,000
/// routes on two workers).
final class SharedUpstream {
    let config: UpstreamConfig

    init(_ config: UpstreamConfig) {
        self.config = config
    }
}
