import Reactor

/// One of the gateway's own endpoints, as routing found it: a login endpoint (start,
/// callback, logout, back-channel logout, hosted request objects, the JWKS), a route's
/// Protected Resource Metadata (RFC 9728), or a module's (`ModuleEndpoint`). Each is answered
/// by the content stage at the end of its built-in route's chain (`OwnRoutes`, `content`).
enum OwnEndpoint {
    case login(LoginEndpoint)
    case protectedResourceMetadata(ProtectedResourceDocument)
    case module(ModuleEndpoint)
    /// A decision call in one of its HTTP forms (Decision/).
    case decision(DecisionEndpoint.DecisionKind)
    /// An ext_authz `Check` call over gRPC.
    case extAuthzCheck

    /// A decision call: its route runs the decision chain (no upgrade: the described request
    /// may ask for one), and it names its route in the log itself, once it knows which.
    var isDecisionCall: Bool {
        switch self {
        case .decision, .extAuthzCheck: true
        default: false
        }
    }

    /// The route the access log, the metrics and the span name.
    var logRoute: String {
        switch self {
        case .login: "login"
        case .protectedResourceMetadata: ProtectedResourceDocument.logRoute
        case .module(let endpoint): endpoint.name
        case .decision: "decision"
        case .extAuthzCheck: "ext_authz"
        }
    }
}

/// The gateway's own endpoints as routes: each family is a built-in route with a plan and a
/// chain, as a configured route has, that ends in a content stage (`OwnEndpoint.content`)
/// instead of the upstream call: nginx's content handlers after the same access phases, and
/// Envoy's `direct_response`. So a stage a route can have applies to them too: the browser's
/// login endpoints take `login.rate_limit` (a limit per client address on `/oauth2/start`,
/// the callback and logout), counted before anything else is done for the request. Made once
/// per config, with the configured routes' plans.
struct OwnRoutes {
    /// The endpoints a browser calls: `/oauth2/start`, the callback, logout.
    let login: RoutePlan
    /// The endpoints the AS and upstreams call, from a few addresses for every user:
    /// back-channel logout, hosted request objects, the JWKS. Never counted by
    /// `login.rate_limit`: a budget sized for one browser would throttle every login (request
    /// objects), keep sessions alive past their logout (back-channel logouts), or refuse the
    /// keys to an upstream behind a NAT.
    let loginService: RoutePlan
    /// Every route's `/.well-known/oauth-protected-resource…` document.
    let metadata: RoutePlan
    /// The modules' own routes, by id (`GatewayModule.routes`).
    let modules: [String: RoutePlan]
    /// The decision endpoints' (decision mode), and the last stages of the chains their
    /// content runs for the described request: the verdict, and an ext_authz Check's answer.
    let decision: RoutePlan
    let verdict = VerdictStage()
    let extAuthzVerdict = ExtAuthzVerdictStage()

    /// `services`: the worker's, to make the chains with; nil makes plans with no stages
    /// before the content (a policy made before the worker's first config).
    init(_ config: GatewayConfig, services: WorkerServices?) {
        var login = Self.route("login")
        if !config.login.rateLimits.isEmpty {
            login.options.settings[RateLimitStage.Settings.self] = config.login.rateLimits
        }
        self.login = RoutePlan(route: SharedRoute(login), pool: nil, metricID: -1, upstream: nil, services: services)
        loginService = RoutePlan(
            route: SharedRoute(Self.route("login")), pool: nil, metricID: -1, upstream: nil, services: services)
        metadata = RoutePlan(
            route: SharedRoute(Self.route(ProtectedResourceDocument.logRoute)), pool: nil, metricID: -1, upstream: nil,
            services: services)
        decision = RoutePlan(
            route: SharedRoute(Self.route("decision")), pool: nil, metricID: -1, upstream: nil, services: services)
        let catalog = services?.modules.catalog ?? config.modules.catalog
        modules = catalog.routes(config).mapValues { route in
            var route = route
            route.options.upgrade.protocols = []
            return RoutePlan(route: SharedRoute(route), pool: nil, metricID: -1, upstream: nil, services: services)
        }
        // A module's endpoint names a route of its own that it also declares: checked once per
        // config, so that no request finds an endpoint without its route's stages.
        for endpoint in catalog.endpoints(config).values {
            if case .own(let id) = endpoint.route {
                precondition(modules[id] != nil, "a module's endpoint names a route it does not declare: \(id)")
            }
        }
    }

    func plan(for endpoint: OwnEndpoint) -> RoutePlan {
        switch endpoint {
        // A browser's endpoints, the AS's among them, count against `login.rate_limit`.
        case .login(.start), .login(.callback), .login(.logout): login
        case .login(.backchannelLogout), .login(.requestObject), .login(.jwks): loginService
        case .protectedResourceMetadata: metadata
        case .decision, .extAuthzCheck: decision
        case .module(let endpoint):
            switch endpoint.route {
            case .browser: login
            // Checked when the plans were made (init): every endpoint's route is there.
            case .own(let id): modules[id] ?? loginService
            }
        }
    }

    /// A built-in route: public (each endpoint checks what it needs itself: a state cookie, a
    /// logout token's signature), no upstream, and no upgrade (none of them switches protocol).
    static func route(_ name: String) -> RouteConfig {
        var route = RouteConfig(index: -1, name: name, match: RouteMatch(path: .prefix("/")), upstream: "")
        route.options.upgrade.protocols = []
        return route
    }
}

extension OwnEndpoint {
    /// The content stage that answers this endpoint, at the end of its built-in route's chain.
    /// Made per request, for the endpoint routing found; the worker's services come with the
    /// request.
    var content: any Stage {
        switch self {
        case .login(.start): LoginStartStage()
        case .login(.callback): LoginCallbackStage()
        case .login(.logout): LogoutStage()
        case .login(.backchannelLogout): BackChannelLogoutStage()
        case .login(.jwks): JWKSStage()
        case .login(.requestObject(let id)): HostedRequestObjectStage(id: id)
        case .protectedResourceMetadata(let document): ProtectedResourceMetadataStage(document)
        case .module(let endpoint): ModuleEndpointStage(endpoint)
        case .decision(let kind): DecisionCallStage(kind)
        case .extAuthzCheck: ExtAuthzCheckStage()
        }
    }
}

/// The content of every route's Protected Resource Metadata document (RFC 9728 §3).
final class ProtectedResourceMetadataStage: Stage {
    let document: ProtectedResourceDocument

    init(_ document: ProtectedResourceDocument) {
        self.document = document
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        request.answering(document.response(to: request.head.method, requestID: request.context.requestID))
    }
}

/// The content of a module's own endpoint (`GatewayModule.endpoints`).
final class ModuleEndpointStage: Stage {
    let endpoint: ModuleEndpoint

    init(_ endpoint: ModuleEndpoint) {
        self.endpoint = endpoint
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        endpoint.answer(request, request.services)
    }
}
