import Yams

/// API keys as a module: the `api_keys:` sets, each worker's tables with its counts and the
/// keys' last use, and the main loop's `APIKeyService`, which reads the sets' files, watches
/// them and sends each new table to the workers. Routes take keys through `auth: api_key`
/// (`TokenStage`), a kind of caller rather than a stage of its own.
enum APIKeys: GatewayModule {
    static let key: ConfigKeyDoc? = ConfigKeyDoc(
        name: "api_keys", type: "mapping: a key set's name to its file (below)", defaultText: "none",
        defaultCheck: nil)
    static let sections = [ConfigSection.apiKeySet]
    static let unset: [String: APIKeySetConfig] = [:]

    static func read(_ node: Node, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: APIKeySetConfig] {
        ConfigParser.apiKeySets(node, issuers: cfg.issuers, r)
    }

    static func makeService(_ shared: NoModuleShared, _ context: ModuleContext) -> APIKeyTables { APIKeyTables() }

    static func makeMain(_ shared: NoModuleShared, _ context: MainContext) -> APIKeyService {
        let service = APIKeyService(log: context.log)
        service.attach(context.workers)
        service.watch(loop: context.loop)
        return service
    }

    /// The keys the files hold, with when the workers last saw each one used.
    static func statusSection(_ config: GatewayConfig, now: Double, workers: APIKeyUse, main: APIKeyService)
        -> StatusSection?
    {
        APIKeySection(main.keys, lastUse: workers.lastUse, now: now).section
    }
}

extension ConfigSection {
    static let apiKeySet = ConfigSection("api_keys.NAME") { APIKeySetConfig.keyTable.docs }
}

extension GatewayConfig {
    /// `api_keys:`: named key sets that routes name (`api_keys:`, `auth: api_key`).
    var apiKeySets: [String: APIKeySetConfig] { self[module: APIKeys.self] }
}

extension WorkerServices {
    /// The key sets' tables, as the main loop's `APIKeyService` last sent them.
    var apiKeys: APIKeyTables { modules[APIKeys.self] }
}
