/// The modules' main-loop parts (`GatewayModule.Main`), made once the workers are, in catalog
/// order: `GatewayServer` tells them of each config and asks them for `/metrics`, `/readyz`
/// and their status sections. Main-loop only.
final class ModuleMains {
    private let modules: [any GatewayModule.Type]
    private let mains: [any ModuleMain]
    private let byModule: [ObjectIdentifier: any ModuleMain]

    /// Makes each module's part and gives it `context.config`.
    init(_ context: MainContext) {
        modules = context.config.modules.catalog.modules
        mains = modules.map { Self.make($0, context) as any ModuleMain }
        byModule = Dictionary(zip(modules.map(ObjectIdentifier.init), mains)) { first, _ in first }
        apply(context.config)
    }

    private static func make<M: GatewayModule>(_ module: M.Type, _ context: MainContext) -> M.Main {
        module.makeMain(context.stores.moduleParts.part(module, context.stores), context)
    }

    /// A module's main-loop part.
    subscript<M: GatewayModule>(_ module: M.Type) -> M.Main {
        unsafeDowncast(byModule[ObjectIdentifier(module)]!, to: M.Main.self)
    }

    func apply(_ config: GatewayConfig) {
        for main in mains { main.apply(config) }
    }

    var metricsText: String { mains.map(\.metricsText).joined() }

    /// What the modules say about readiness, in catalog order.
    var readiness: [ModuleReadiness] { mains.compactMap(\.readiness) }

    /// Each module's status section, from the workers' parts (added up) and its main part.
    func sections(_ config: GatewayConfig, _ workers: ModuleStatusSnapshot, now: Double) -> [StatusSection] {
        modules.indices.compactMap { i in
            Self.section(modules[i], config, i < workers.parts.count ? workers.parts[i] : nil, mains[i], now)
        }
    }

    private static func section<M: GatewayModule>(
        _ module: M.Type, _ config: GatewayConfig, _ part: (any ModuleStatus)?, _ main: any ModuleMain, _ now: Double
    ) -> StatusSection? {
        module.statusSection(
            config, now: now, workers: part as? M.Service.Status ?? M.Service.Status(),
            main: unsafeDowncast(main, to: M.Main.self))
    }
}
