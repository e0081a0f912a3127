import OAuth

/// A mapping of the config file whose keys are fixed, with the keys it accepts, as its
/// `ConfigKeyTable` declares them.
///
/// The parser reads every such mapping through its section, so a key the section does not
/// list is a problem ("is not a known key; did you mean …"). The raw value is the section's
/// path as docs/configuration.md writes it (`NAME`: a name the config chooses, `[]`: each
/// item of a list), which lets a test hold the reference and the parser to the same keys.
/// Mappings whose keys the config chooses (the names under `issuers:`, `clients:` and
/// `upstreams:`, a route's `headers:`, `require.claims:`, a client's `extra:`) have no
/// section. The core's sections are listed here; a module declares its own beside its key
/// table (`GatewayModule.sections`).
struct ConfigSection: Sendable, Equatable {
    let rawValue: String
    private let docs: @Sendable () -> [ConfigKeyDoc]

    init(_ rawValue: String, keys docs: @escaping @Sendable () -> [ConfigKeyDoc]) {
        self.rawValue = rawValue
        self.docs = docs
    }

    static func == (a: ConfigSection, b: ConfigSection) -> Bool { a.rawValue == b.rawValue }

    /// The keys, in the order check-config lists them when one is unknown: the table's.
    var keys: [String] { keyDocs.map(\.name) }

    /// Each key's reference row as the section's key table (`ConfigKeyTable`, its model's
    /// `keyTable`) says it.
    var keyDocs: [ConfigKeyDoc] { docs() }

    /// Each key's full path as docs/configuration.md names it, e.g. `limits.max_body_size`.
    var keyPaths: [String] { keys.map { rawValue.isEmpty ? $0 : "\(rawValue).\($0)" } }

    /// Every section of the gateway's config: the core's and its modules'.
    static var allCases: [ConfigSection] { core + ModuleCatalog.gateway.sections }
    static let top = ConfigSection("") { GatewayConfig.keyTable.docs + ModuleCatalog.gateway.topKeyDocs }
    static let listen = ConfigSection("listen[]") { ListenerConfig.keyTable.docs }
    static let listenTLS = ConfigSection("listen[].tls") { ListenerTLS.keyTable.docs }
    static let listenTLSCertificate = ConfigSection("listen[].tls.certificates[]") {
        ListenerTLS.certificateKeyTable.docs
    }
    static let adminListen = ConfigSection("admin_listen") { ListenerConfig.adminKeyTable.docs }
    static let limits = ConfigSection("limits") { Limits.keyTable.docs }
    static let accessLog = ConfigSection("access_log") { AccessLogOutput.keyTable.docs }
    static let tracing = ConfigSection("tracing") { TracingConfig.keyTable.docs }
    static let tokenCache = ConfigSection("token_cache") { GatewayConfig.tokenCacheKeyTable.docs }
    static let store = ConfigSection("store") { StoreConfig.keyTable.docs }
    static let dpop = ConfigSection("dpop") { DPoPSettings.keyTable.docs }
    static let session = ConfigSection("session") { SessionConfig.keyTable.docs }
    static let login = ConfigSection("login") { LoginConfig.keyTable.docs }
    static let decision = ConfigSection("decision") { DecisionConfig.keyTable.docs }
    static let issuer = ConfigSection("issuers.NAME") { IssuerConfig.keyTable.docs }
    static let introspection = ConfigSection("issuers.NAME.introspection") { IntrospectionConfig.keyTable.docs }
    static let client = ConfigSection("clients.NAME") { ClientConfig.keyTable.docs }
    static let clientTLS = ConfigSection("clients.NAME.tls") { ClientTLS.keyTable.docs }
    static let upstream = ConfigSection("upstreams.NAME") { UpstreamConfig.keyTable.docs }
    static let upstreamTLS = ConfigSection("upstreams.NAME.tls") { UpstreamTLSConfig.keyTable.docs }
    static let upstreamSign = ConfigSection("upstreams.NAME.sign") { MessageSigningConfig.keyTable.docs }
    static let route = ConfigSection("routes[]") { RouteConfig.keyTable.docs + ModuleCatalog.gateway.routeKeys.docs }
    static let routeMatch = ConfigSection("routes[].match") { RouteMatch.keyTable.docs }
    static let routeDPoP = ConfigSection("routes[].dpop") { DPoPRouteConfig.keyTable.docs }
    static let requirement = ConfigSection("routes[].require") { AuthorizationRequirement.keyTable.docs }
    static let claimRule = ConfigSection("routes[].require.claims.CLAIM") {
        AuthorizationRequirement.claimRuleKeyTable.docs
    }

    private static let core: [ConfigSection] = [
        .top, .listen, .listenTLS, .listenTLSCertificate, .adminListen, .limits, .accessLog, .tracing, .tokenCache,
        .store, .dpop, .session, .login, .decision, .issuer, .introspection, .client, .clientTLS, .upstream,
        .upstreamTLS, .upstreamSign, .route, .routeMatch, .routeDPoP, .requirement, .claimRule
    ]
}
