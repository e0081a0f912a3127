import JOSE
import Logging
import OAuth
import Reactor
import Yams

/// A capability that brings all of its parts itself: its top-level config key and the sections
/// below it, the steps that hold that section to the rest of the config, what the process
/// keeps for every worker, its service on each worker with the metrics and status that
/// service reports, and the keyed stages routes turn on. The gateway's shared files name no
/// module: they walk the catalog (`ModuleCatalog`). nginx's `ngx_module_t` (its `commands`,
/// `create_main_conf`, `init_process`, `postconfiguration`), Envoy's `REGISTER_FACTORY`.
///
/// Every part has a default, so a module says only what it has: a module with one keyed
/// stage and nothing else is `enum M: GatewayModule { static let stages = [S.self] }`.
protocol GatewayModule {
    /// What its top-level key says, validated (`GatewayConfig[module:]`).
    associatedtype Config: Sendable = NoModuleConfig
    /// What the process keeps for all its workers (a shared table, a cache), made once at start.
    associatedtype Shared: AnyObject = NoModuleShared
    /// Its part of each worker: made with the worker, told of every config.
    associatedtype Service: ModuleService = NoModuleService
    /// Its part on the main loop (files it watches, streams it keeps, what it sends the
    /// workers): made once the workers are, told of every config.
    associatedtype Main: ModuleMain = NoModuleMain

    /// Its top-level key's reference row (docs/configuration.md); nil: it has none.
    static var key: ConfigKeyDoc? { get }
    /// The mappings below its key whose keys are fixed, for the parser and the reference.
    static var sections: [ConfigSection] { get }
    /// Its config when the file leaves the key out.
    static var unset: Config { get }
    /// When its key is read, among the core's sections.
    static var readAt: ModuleReadPoint { get }
    /// Reads its key's value (`node`). Problems go to `r`.
    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> Config
    /// What it adds to the rest of the config at its read point, whether or not its key is
    /// there (an issuer of its own; what it reads under a core section's entries).
    static func derive(_ cfg: inout GatewayConfig, _ top: [String: Node], _ r: ConfigReader)
    /// What it checks or rewrites once every section is read (`ConfigStep`): its profile
    /// steps run after the core's, its checks after the core's.
    static var steps: [ConfigStep] { get }
    /// The stages it brings, in the order they run at one position.
    static var stages: [any ModuleStage.Type] { get }
    /// Its own endpoints under this config, by path (`ModuleEndpoint`).
    static func endpoints(_ config: GatewayConfig) -> [String: ModuleEndpoint]
    /// The built-in routes its endpoints are on, by id (`ModuleRoute.own`): a public route
    /// with no upstream, whose settings say what its chain has (a rate limit of its own).
    static func routes(_ config: GatewayConfig) -> [String: RouteConfig]
    /// Its process part (on the main thread, before the first worker is made).
    static func makeShared(_ stores: StoreBackend) -> Shared
    /// Its part of the worker on `context.loop` (on the thread that makes the worker).
    static func makeService(_ shared: Shared, _ context: ModuleContext) -> Service
    /// Its main-loop part, given the workers it may send to (on the main thread, at start).
    static func makeMain(_ shared: Shared, _ context: MainContext) -> Main
    /// Its section of the status page, from what the workers report (added up) and its main
    /// part; the workers' own section unless it says otherwise.
    static func statusSection(_ config: GatewayConfig, now: Double, workers: Service.Status, main: Main)
        -> StatusSection?
}

extension GatewayModule {
    static var key: ConfigKeyDoc? { nil }
    static var readAt: ModuleReadPoint { .afterIssuers }
    static func derive(_ cfg: inout GatewayConfig, _ top: [String: Node], _ r: ConfigReader) {}
    static var sections: [ConfigSection] { [] }
    static var steps: [ConfigStep] { [] }
    static var stages: [any ModuleStage.Type] { [] }
    static func endpoints(_ config: GatewayConfig) -> [String: ModuleEndpoint] { [:] }
    static func routes(_ config: GatewayConfig) -> [String: RouteConfig] { [:] }
    static func statusSection(_ config: GatewayConfig, now: Double, workers: Service.Status, main: Main)
        -> StatusSection?
    {
        workers.section(config)
    }
}

extension GatewayModule where Config == NoModuleConfig {
    static var unset: Config { NoModuleConfig() }
    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> Config { NoModuleConfig() }
}

extension GatewayModule where Shared == NoModuleShared {
    static func makeShared(_ stores: StoreBackend) -> Shared { NoModuleShared() }
}

extension GatewayModule where Service == NoModuleService {
    static func makeService(_ shared: Shared, _ context: ModuleContext) -> Service { NoModuleService() }
}

extension GatewayModule where Main == NoModuleMain {
    static func makeMain(_ shared: Shared, _ context: MainContext) -> Main { NoModuleMain() }
}

/// Where a module's key is read among the core's sections.
enum ModuleReadPoint: Sendable {
    /// Once the issuers and clients are read (the names a section may refer to), before the
    /// session, login and routes (which may name what it defines: a login endpoint's rate
    /// limit).
    case afterIssuers
    /// Once every other section is read (the login, the upstreams, the other modules'),
    /// before the routes.
    case beforeRoutes
}

/// What a module's worker service is made with: the worker's loop and clocks, the process's
/// stores, the config it starts on, and the services of the modules before it in the
/// catalog.
struct ModuleContext {
    let loop: EventLoop
    let log: Logger
    let wallClock: any WallClock
    let stores: StoreBackend
    let config: GatewayConfig
    fileprivate(set) var earlier: [ObjectIdentifier: any ModuleService] = [:]

    init(loop: EventLoop, log: Logger, wallClock: any WallClock, stores: StoreBackend, config: GatewayConfig) {
        self.loop = loop
        self.log = log
        self.wallClock = wallClock
        self.stores = stores
        self.config = config
    }

    /// The service of a module before this one in the catalog.
    func service<M: GatewayModule>(_ module: M.Type) -> M.Service {
        guard let service = earlier[ObjectIdentifier(module)] else {
            preconditionFailure("\(module) must come before the modules that use it in the catalog")
        }
        return unsafeDowncast(service, to: M.Service.self)
    }

    mutating func made(_ module: any GatewayModule.Type, _ service: any ModuleService) {
        earlier[ObjectIdentifier(module)] = service
    }
}

/// What a module's main-loop part is made with: the main loop, the process's stores and
/// workers, and the config it starts on.
struct MainContext {
    let loop: EventLoop
    let log: Logger
    let wallClock: any WallClock
    let stores: StoreBackend
    let workers: [Worker]
    /// The issuers' keys and metadata (a token endpoint a module's own client needs).
    let issuerKeys: IssuerKeyService
    let config: GatewayConfig
}

/// A module's part on the main loop. Main-loop only.
protocol ModuleMain: AnyObject {
    /// The config at start, and each one a reload applies.
    func apply(_ config: GatewayConfig)
    /// Its process-wide families for `/metrics` (Prometheus text); "" for none.
    var metricsText: String { get }
    /// What it adds to `/readyz`: nil when it has nothing to say.
    var readiness: ModuleReadiness? { get }
}

extension ModuleMain {
    var metricsText: String { "" }
    var readiness: ModuleReadiness? { nil }
}

/// A module's word on readiness: not ready (the reason), or ready with a note.
enum ModuleReadiness: Equatable {
    case notReady(String)
    case readyWithNote(String)
}

/// A module's part of one worker. Loop-thread only.
protocol ModuleService: AnyObject {
    /// This worker's counters, added up over the workers for `/metrics`.
    associatedtype Metrics: ModuleMetrics = NoModuleMetrics
    /// This worker's part of the status page, added up over the workers.
    associatedtype Status: ModuleStatus = NoModuleStatus

    /// A new config, for the requests that start from now on.
    func apply(_ config: GatewayConfig)
    /// Once the worker's services are all made: what it wires into the core's (a check the
    /// token validator asks it for).
    func attach(_ services: WorkerServices)
    /// An issuer's metadata arrived (its token endpoints, for a client of its own).
    func discovered(issuer: String, metadata: ProviderMetadata)
    var metrics: Metrics { get }
    var status: Status { get }
}

extension ModuleService {
    func attach(_ services: WorkerServices) {}
    func discovered(issuer: String, metadata: ProviderMetadata) {}
}

extension ModuleService where Metrics == NoModuleMetrics {
    var metrics: Metrics { NoModuleMetrics() }
}

extension ModuleService where Status == NoModuleStatus {
    var status: Status { NoModuleStatus() }
}

/// A module's counters: one worker's, or all of them added up.
protocol ModuleMetrics: Sendable {
    init()
    mutating func add(_ other: Self)
    /// Its families, in the Prometheus text format.
    func write(to out: inout PrometheusText)
}

/// A module's part of the status page: one worker's, or all of them added up.
protocol ModuleStatus: Sendable {
    init()
    mutating func add(_ other: Self)
    /// Its section of the page for this config; nil: it has nothing to show.
    func section(_ config: GatewayConfig) -> StatusSection?
}

/// One section of the status page: its member of `/status.json` and its part of `/status`
/// (HTML whose every config or peer value is escaped).
struct StatusSection: Sendable {
    let name: String
    let json: JSONValue
    let html: String
}

struct NoModuleConfig: Sendable {}
final class NoModuleShared {}
final class NoModuleMain: ModuleMain {
    func apply(_ config: GatewayConfig) {}
}
final class NoModuleService: ModuleService {
    func apply(_ config: GatewayConfig) {}
}
struct NoModuleMetrics: ModuleMetrics {
    mutating func add(_ other: NoModuleMetrics) {}
    func write(to out: inout PrometheusText) {}
}
struct NoModuleStatus: ModuleStatus {
    mutating func add(_ other: NoModuleStatus) {}
    func section(_ config: GatewayConfig) -> StatusSection? { nil }
}
