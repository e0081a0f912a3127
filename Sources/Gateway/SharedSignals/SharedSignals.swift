import Reactor
import Yams

/// Shared Signals as a module: the `shared_signals:` transmitters, the process's hub (their
/// streams and the revocations their events left), each worker's copy of the revocations and
/// its writer to the Redis store's log, and the main loop's `SharedSignalsService` (streams,
/// key refetches, the log's reader, the purge). The push endpoints are built-in routes
/// (`OwnRoutes`); the token, session and tunnel paths ask the worker's `RevocationSnapshot`.
enum SharedSignals: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "shared_signals", type: "mapping: a transmitter's name to its stream (below)", defaultText: "none",
        defaultCheck: nil)
    static let sections = [ConfigSection.transmitter, .transmitterAuth]
    static let unset: [String: TransmitterConfig] = [:]
    static let steps = [
        ConfigStep("shared signals' push paths", .check) { cfg, top, r in
            ConfigParser.checkSharedSignals(cfg, top: top, r)
        }
    ]

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: TransmitterConfig] {
        ConfigParser.sharedSignals(node, cfg, r)
    }

    /// Each push transmitter's endpoint (RFC 8935), on a route of its own: called by a few
    /// transmitters, never counted by `login.rate_limit`.
    static func endpoints(_ config: GatewayConfig) -> [String: ModuleEndpoint] {
        var out: [String: ModuleEndpoint] = [:]
        for (name, t) in config.sharedSignals where t.delivery == .push && out[t.endpointPath] == nil {
            out[t.endpointPath] = ModuleEndpoint(name: "shared-signals", route: .own("shared-signals")) {
                request, services in
                SharedSignalsPush(services: services, hub: services.signals).handle(request, transmitter: name)
            }
        }
        return out
    }

    static func routes(_ config: GatewayConfig) -> [String: RouteConfig] {
        config.sharedSignals.isEmpty ? [:] : ["shared-signals": OwnRoutes.route("shared-signals")]
    }

    static func makeShared(_ stores: StoreBackend) -> SharedSignalsHub { SharedSignalsHub() }

    static func makeService(_ hub: SharedSignalsHub, _ context: ModuleContext) -> SharedSignalsWorker {
        SharedSignalsWorker(
            hub: hub,
            log: context.stores.redis(for: context.loop).map {
                RevocationLog.Writer(client: $0.client, prefix: $0.prefix, hub: hub, wallClock: context.wallClock)
            })
    }

    static func makeMain(_ hub: SharedSignalsHub, _ context: MainContext) -> SharedSignalsService {
        let service = SharedSignalsService(
            loop: context.loop, log: context.log, hub: hub, wallClock: context.wallClock,
            grantTokens: context.stores.grantTokens, store: context.stores.redis(for: context.loop))
        service.tokenEndpoint = { [weak keys = context.issuerKeys] issuer in
            keys?.metadataByIssuer[issuer].map { ($0.tokenEndpoint, $0.usingMTLSAliases().tokenEndpoint) }
        }
        return service
    }

    static func statusSection(
        _ config: GatewayConfig, now: Double, workers: SharedSignalsWorkerStatus, main: SharedSignalsService
    ) -> StatusSection? {
        SharedSignalsSection(main.hub).section
    }
}

/// One worker's side of Shared Signals: the process's hub, this worker's copy of the
/// revocations, and, with a Redis store, where an applied SET is written before it is
/// answered. Loop-thread only.
final class SharedSignalsWorker: ModuleService {
    let hub: SharedSignalsHub
    let revocations: RevocationSnapshot
    let log: RevocationLog.Writer?
    var status: SharedSignalsWorkerStatus { SharedSignalsWorkerStatus() }

    init(hub: SharedSignalsHub, log: RevocationLog.Writer?) {
        self.hub = hub
        self.log = log
        revocations = RevocationSnapshot(hub: hub)
    }

    func apply(_ config: GatewayConfig) {}

    /// Introspected tokens are checked against the revocations too.
    func attach(_ services: WorkerServices) { services.authentication.tokens.introspector.revocations = revocations }
}

extension SharedSignalsService: ModuleMain {
    var metricsText: String { hub.metricsText }

    /// A replica that serves before it knows the standing revocations would let a revoked
    /// caller through.
    var readiness: ModuleReadiness? {
        if !revocationsLoaded { return .notReady("shared signals: the store's revocations not read yet") }
        if let why = revocationsUnread {
            return .readyWithNote("shared signals: the store's revocations could not be read: \(why)")
        }
        return nil
    }
}

extension ConfigSection {
    static let transmitter = ConfigSection("shared_signals.NAME") { TransmitterConfig.keyTable.docs }
    static let transmitterAuth = ConfigSection("shared_signals.NAME.auth") { TransmitterConfig.authKeyTable.docs }
}

extension GatewayConfig {
    /// `shared_signals:`: Shared Signals transmitters whose events revoke tokens and sessions.
    var sharedSignals: [String: TransmitterConfig] { self[module: SharedSignals.self] }
}

extension WorkerServices {
    /// The transmitters (for their push endpoints) and the process's revocations.
    var signals: SharedSignalsHub { modules[SharedSignals.self].hub }
    /// This worker's copy of the revocations their events left.
    var revocations: RevocationSnapshot { modules[SharedSignals.self].revocations }
    /// With a Redis store, where an applied SET is written before it is answered.
    var revocationLog: RevocationLog.Writer? { modules[SharedSignals.self].log }
}
