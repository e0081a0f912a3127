import Reactor
import Yams

/// The authorization server MCP clients see, as a module: the `authorization_server:`
/// section and the `self` issuer it adds, the process's counts (its hub) and memory grant
/// store, each worker's endpoints' state over its grants, and the hub on the main loop for
/// `/metrics` and the status page. Its endpoints are built-in routes (`OwnRoutes`). It uses
/// Shared Signals' revocations, so it comes after that module in the catalog.
enum AuthorizationServer: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "authorization_server", type: "mapping (below)", defaultText: "none", defaultCheck: nil)
    static let sections = [ConfigSection.authorizationServer, .asClients, .asIDJAG]
    /// After the login, the rate limits and the clients it names.
    static let readAt = ModuleReadPoint.beforeRoutes
    static let unset: AuthorizationServerConfig? = nil
    static let steps = [
        ConfigStep("authorization server routes", .check) { cfg, top, r in
            ConfigParser.authorizationServerRoutes(cfg, routesNode: top["routes"], r)
        }
    ]

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> AuthorizationServerConfig? {
        ConfigParser.authorizationServer(node, cfg, r)
    }

    /// `issuers: [self]` names it: its issuer, before the routes are read.
    static func derive(_ cfg: inout GatewayConfig, _ top: [String: Node], _ r: ConfigReader) {
        if let server = cfg.authorizationServer { ConfigParser.selfIssuer(server, into: &cfg, top: top, r) }
    }

    /// Its endpoints: the browser's (authorize, consent, the consents page) count against
    /// `login.rate_limit`; registration (RFC 7591), which anyone may call, has a limit per
    /// address of its own; the rest (metadata, keys, token) are called by clients and
    /// resource servers.
    static func endpoints(_ config: GatewayConfig) -> [String: ModuleEndpoint] {
        guard let server = config.authorizationServer else { return [:] }
        return AuthorizationServerEndpoint.paths(of: server).mapValues { endpoint in
            let route: ModuleRoute =
                switch endpoint {
                case .authorize, .consent, .consents: .browser
                case .register: .own(registrationRoute)
                case .metadata, .jwks, .token: .own(name)
                }
            return ModuleEndpoint(name: name, route: route) { request, services in
                AuthorizationServerEndpoints(services: services).handle(request, endpoint)
            }
        }
    }

    static func routes(_ config: GatewayConfig) -> [String: RouteConfig] {
        guard let server = config.authorizationServer else { return [:] }
        var register = OwnRoutes.route(name)
        let limits = server.clients.registrationLimits
        register.options.settings[RateLimitStage.Settings.self] = limits.isEmpty ? [RegistrationEndpoint.limit] : limits
        return [name: OwnRoutes.route(name), registrationRoute: register]
    }

    /// Its endpoints' name in logs and metrics, and the id of their route.
    static let name = "authorization-server"
    static let registrationRoute = "authorization-server-registration"

    /// The process's counts, and the grants with the memory store.
    final class Shared {
        let hub = AuthorizationServerHub()
        let memoryGrants = MemoryAuthorizationGrants()
    }

    static func makeShared(_ stores: StoreBackend) -> Shared { Shared() }

    static func makeService(_ shared: Shared, _ context: ModuleContext) -> AuthorizationServerWorker {
        let signals = context.service(SharedSignals.self)
        let store: AuthorizationGrantStore =
            context.stores.redis(for: context.loop).map {
                RedisAuthorizationGrants(client: $0.client, prefix: $0.prefix)
            } ?? shared.memoryGrants
        return AuthorizationServerWorker(
            hub: shared.hub, loop: context.loop, wallClock: context.wallClock,
            grants: AuthorizationGrants(
                store: store, hub: signals.hub, revocationLog: signals.log, wallClock: context.wallClock,
                config: context.config))
    }

    static func makeMain(_ shared: Shared, _ context: MainContext) -> Main { Main(hub: shared.hub) }

    /// The hub on the main loop: told of each config, read for `/metrics`.
    final class Main: ModuleMain {
        let hub: AuthorizationServerHub
        init(hub: AuthorizationServerHub) { self.hub = hub }
        func apply(_ config: GatewayConfig) { hub.apply(config) }
        var metricsText: String { hub.metricsText }
    }

    static func statusSection(
        _ config: GatewayConfig, now: Double, workers: AuthorizationServerWorkerStatus, main: Main
    ) -> StatusSection? {
        AuthorizationServerSection(config, hub: main.hub).section
    }
}

extension AuthorizationServerWorker: ModuleService {
    var status: AuthorizationServerWorkerStatus { AuthorizationServerWorkerStatus() }
}

extension ConfigSection {
    static let authorizationServer = ConfigSection("authorization_server") {
        AuthorizationServerConfig.keyTable.docs
    }
    static let asClients = ConfigSection("authorization_server.clients") {
        AuthorizationServerConfig.clientsKeyTable.docs
    }
    static let asIDJAG = ConfigSection("authorization_server.id_jag") { AuthorizationServerConfig.idJAGKeyTable.docs }
}

extension GatewayConfig {
    /// `authorization_server:`: the AS MCP clients see (its tokens: `issuers: [self]`); nil: none.
    var authorizationServer: AuthorizationServerConfig? { self[module: AuthorizationServer.self] }
}

extension WorkerServices {
    /// The authorization server's endpoints' state on this worker (its client documents).
    var authorizationServer: AuthorizationServerWorker { modules[AuthorizationServer.self] }
}
