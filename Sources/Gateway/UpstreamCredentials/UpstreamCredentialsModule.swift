import OAuth
import Yams

/// The upstreams' own credentials as a module (`upstreams.NAME.credentials`): what it reads
/// under each upstream, its check of the routes, each worker's secrets and token sources over
/// the process's held tokens, the main loop's `UpstreamSecretService` (the secrets' files,
/// watched), and `UpstreamCredentialStage` before the upstream request is made.
enum UpstreamCredentialsModule: GatewayModule {
    /// After the upstreams, and the clients and issuers a grant names.
    static let readAt = ModuleReadPoint.beforeRoutes
    static let sections = [
        ConfigSection.upstreamCredentials, .upstreamCredentialHeader, .upstreamCredentialGrant
    ]
    static let stages: [any ModuleStage.Type] = [UpstreamCredentialStage.self]
    static let steps = [
        ConfigStep("upstream credentials", .check) { cfg, top, r in
            ConfigParser.upstreamCredentialRoutes(cfg, routesNode: top["routes"], r)
        }
    ]

    /// What each upstream's `credentials:` says (a row of the upstream's table this module
    /// reads), kept on its `UpstreamConfig`.
    static func derive(_ cfg: inout GatewayConfig, _ top: [String: Node], _ r: ConfigReader) {
        // In the file's order, so that the problems come in it too.
        var given: [(name: String, node: Node)] = []
        for (key, value) in top["upstreams"]?.mapping ?? [:] {
            guard let name = key.string, let n = value.mapping?[upstreamKey.name] else { continue }
            given.append((name, n))
        }
        ConfigParser.upstreamCredentials(given, into: &cfg.upstreams, clients: cfg.clients, issuers: cfg.issuers, r)
    }

    /// The key this module reads under each upstream: its row in `UpstreamKeys.keyTable`.
    static let upstreamKey = ConfigKey<UpstreamKeys, ConfigReader>(
        "credentials", type: "mapping (below): the upstream's own credential, added to every request",
        default: "none: nothing added", reader: .module(UpstreamCredentialsModule.self))

    static func makeService(_ shared: NoModuleShared, _ context: ModuleContext) -> UpstreamCredentials {
        UpstreamCredentials(loop: context.loop, shared: context.stores.grantTokens)
    }

    static func makeMain(_ shared: NoModuleShared, _ context: MainContext) -> UpstreamSecretService {
        let service = UpstreamSecretService(log: context.log)
        service.attach(context.workers)
        service.watch(loop: context.loop)
        return service
    }
}

extension UpstreamCredentials: ModuleService {
    func discovered(issuer: String, metadata: ProviderMetadata) {
        discovered(
            issuer: issuer, tokenEndpoint: metadata.tokenEndpoint, mtls: metadata.usingMTLSAliases().tokenEndpoint)
    }
}

extension UpstreamSecretService: ModuleMain {}

extension ConfigSection {
    static let upstreamCredentials = ConfigSection("upstreams.NAME.credentials") {
        UpstreamCredentialsConfig.keyTable.docs
    }
    static let upstreamCredentialHeader = ConfigSection("upstreams.NAME.credentials.header") {
        UpstreamCredentialsConfig.headerKeyTable.docs
    }
    static let upstreamCredentialGrant = ConfigSection("upstreams.NAME.credentials.client_credentials") {
        UpstreamCredentialsConfig.grantKeyTable.docs
    }
}

extension WorkerServices {
    /// The upstreams' own credentials: secrets and tokens.
    var upstreamCredentials: UpstreamCredentials { modules[UpstreamCredentialsModule.self] }
}
