import Foundation
import OAuth

// Each module's parts, one holder per lifetime: its config (`ModuleConfigs`, in the config),
// its process part (`ProcessModuleParts`, in the stores), its worker service
// (`ModuleServices`, in the worker's services), and what the workers report
// (`ModuleMetricsSnapshot`, `ModuleStatusSnapshot`). A part is found by its module's type, so
// a module reads back its own types and no other module can reach them by a name; values are
// boxed by their known type and read with no dynamic cast (as `RouteSettings`).

/// The modules' configs in a parsed config, with the catalog it was read with.
struct ModuleConfigs: Sendable {
    let catalog: ModuleCatalog
    private var values: [ObjectIdentifier: any ModuleValueBox] = [:]

    init(catalog: ModuleCatalog = .gateway) { self.catalog = catalog }

    subscript<M: GatewayModule>(_ module: M.Type) -> M.Config {
        // Only the setter stores under a module, and always its own config type.
        get {
            values[ObjectIdentifier(module)].map { unsafeDowncast($0, to: ModuleValue<M.Config>.self).value }
                ?? module.unset
        }
        set { values[ObjectIdentifier(module)] = ModuleValue(newValue) }
    }
}

private protocol ModuleValueBox: AnyObject, Sendable {}

private final class ModuleValue<Value: Sendable>: ModuleValueBox {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension GatewayConfig {
    /// A module's config: what its key said, or its `unset` value.
    subscript<M: GatewayModule>(module module: M.Type) -> M.Config {
        get { modules[module] }
        set { modules[module] = newValue }
    }
}

/// The modules' process parts, each made on first ask (the first worker's services) and kept
/// for the process. Asked on the thread that makes workers; locked all the same, as tests make
/// workers from several threads.
final class ProcessModuleParts: @unchecked Sendable {
    private var parts: [ObjectIdentifier: AnyObject] = [:]
    private let lock = NSLock()

    func part<M: GatewayModule>(_ module: M.Type, _ stores: StoreBackend) -> M.Shared {
        lock.lock()
        defer { lock.unlock() }
        if let part = parts[ObjectIdentifier(module)] { return unsafeDowncast(part, to: M.Shared.self) }
        let part = module.makeShared(stores)
        parts[ObjectIdentifier(module)] = part
        return part
    }
}

/// One worker's module services, made with the worker in catalog order.
struct ModuleServices {
    /// The catalog they were made for, fixed at start: the route plans' stages come from it.
    let catalog: ModuleCatalog
    private let services: [ObjectIdentifier: any ModuleService]
    private let ordered: [any ModuleService]

    init(_ catalog: ModuleCatalog, _ context: ModuleContext) {
        self.catalog = catalog
        var context = context
        var ordered: [any ModuleService] = []
        for module in catalog.modules {
            let service = Self.make(module, context) as any ModuleService
            context.made(module, service)
            ordered.append(service)
        }
        self.ordered = ordered
        services = context.earlier
    }

    private static func make<M: GatewayModule>(_ module: M.Type, _ context: ModuleContext) -> M.Service {
        module.makeService(context.stores.moduleParts.part(module, context.stores), context)
    }

    /// A module's service on this worker. The catalog grows only from `.gateway`
    /// (`ModuleCatalog.adding`), so every module the gateway names is here.
    subscript<M: GatewayModule>(_ module: M.Type) -> M.Service {
        unsafeDowncast(services[ObjectIdentifier(module)]! as AnyObject, to: M.Service.self)
    }

    func apply(_ config: GatewayConfig) {
        for service in ordered { service.apply(config) }
    }

    func attach(_ services: WorkerServices) {
        for service in ordered { service.attach(services) }
    }

    func discovered(issuer: String, metadata: ProviderMetadata) {
        for service in ordered { service.discovered(issuer: issuer, metadata: metadata) }
    }

    var metrics: ModuleMetricsSnapshot { ModuleMetricsSnapshot(parts: ordered.map { $0.metrics }) }
    var status: ModuleStatusSnapshot { ModuleStatusSnapshot(parts: ordered.map { $0.status }) }
}

/// The modules' counters of one worker, or of all of them added up, in catalog order.
struct ModuleMetricsSnapshot: Sendable {
    private(set) var parts: [any ModuleMetrics] = []

    mutating func add(_ other: ModuleMetricsSnapshot) {
        guard !parts.isEmpty else {
            parts = other.parts
            return
        }
        for i in parts.indices where i < other.parts.count { parts[i] = parts[i].adding(other.parts[i]) }
    }

    func write(to out: inout PrometheusText) {
        for part in parts { part.write(to: &out) }
    }
}

/// The modules' status of one worker, or of all of them added up, in catalog order.
struct ModuleStatusSnapshot: Sendable {
    private(set) var parts: [any ModuleStatus] = []

    mutating func add(_ other: ModuleStatusSnapshot) {
        guard !parts.isEmpty else {
            parts = other.parts
            return
        }
        for i in parts.indices where i < other.parts.count { parts[i] = parts[i].adding(other.parts[i]) }
    }

    /// Each module's section; a module no worker reported on (none has answered yet) shows
    /// its empty status, so every section is always on the page.
    func sections(_ config: GatewayConfig) -> [StatusSection] {
        config.modules.catalog.modules.enumerated().compactMap { i, module in
            (i < parts.count ? parts[i] : Self.empty(module)).section(config)
        }
    }

    private static func empty<M: GatewayModule>(_ module: M.Type) -> any ModuleStatus { M.Service.Status() }
}

extension ModuleMetrics {
    /// This and another worker's counters of the same module (the snapshots list the modules
    /// in the same order, so the types match; a mismatch would keep this one's).
    fileprivate func adding(_ other: any ModuleMetrics) -> any ModuleMetrics {
        guard let other = other as? Self else { return self }
        var sum = self
        sum.add(other)
        return sum
    }
}

extension ModuleStatus {
    fileprivate func adding(_ other: any ModuleStatus) -> any ModuleStatus {
        guard let other = other as? Self else { return self }
        var sum = self
        sum.add(other)
        return sum
    }
}
