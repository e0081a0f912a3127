import OAuth

/// The mappings of the config file whose keys are fixed, each with the keys it accepts:
/// taken from the section's `ConfigKeyTable` where it has one (its model's `keyTable`), else
/// listed here.
///
/// The parser reads every such mapping through its section, so a key the section does not
/// list is a problem ("is not a known key; did you mean …"). The raw value is the section's
/// path as docs/configuration.md writes it (`NAME`: a name the config chooses, `[]`: each
/// item of a list), which lets a test hold the reference and the parser to the same keys.
/// Mappings whose keys the config chooses (the names under `issuers:`, `clients:` and
/// `upstreams:`, a route's `headers:`, `require.claims:`, a client's `extra:`) have no
/// section.
enum ConfigSection: String, CaseIterable, Sendable {
    case top = ""
    case listen = "listen[]"
    case listenTLS = "listen[].tls"
    case listenTLSCertificate = "listen[].tls.certificates[]"
    case adminListen = "admin_listen"
    case limits
    case accessLog = "access_log"
    case tracing
    case tokenCache = "token_cache"
    case store
    case dpop
    case session
    case login
    case decision
    case issuer = "issuers.NAME"
    case introspection = "issuers.NAME.introspection"
    case client = "clients.NAME"
    case clientTLS = "clients.NAME.tls"
    case upstream = "upstreams.NAME"
    case upstreamTLS = "upstreams.NAME.tls"
    case route = "routes[]"
    case routeMatch = "routes[].match"
    case routeDPoP = "routes[].dpop"
    case requirement = "routes[].require"
    case claimRule = "routes[].require.claims.CLAIM"
    case identityAssertion = "routes[].identity_assertion"
    case mcp = "routes[].mcp"
    /// An entry of `mcp.methods`, `mcp.tools`, `mcp.resources` or `mcp.prompts` (same keys).
    case mcpRule = "routes[].mcp.tools.NAME"
    case tokenExchange = "routes[].token_exchange"

    /// The keys, in the order check-config lists them when one is unknown.
    var keys: [String] {
        switch self {
        case .top: GatewayConfig.keyTable.names
        case .listen: ListenerConfig.keyTable.names
        case .adminListen: ListenerConfig.adminKeyTable.names
        case .listenTLS: ListenerTLS.keyTable.names
        case .listenTLSCertificate: ListenerTLS.certificateKeyTable.names
        case .limits: Limits.keyTable.names
        case .accessLog: AccessLogOutput.keyTable.names
        case .tracing: TracingConfig.keyTable.names
        case .tokenCache: GatewayConfig.tokenCacheKeyTable.names
        case .store: StoreConfig.keyTable.names
        case .dpop: DPoPSettings.keyTable.names
        case .session: SessionConfig.keyTable.names
        case .login: LoginConfig.keyTable.names
        case .decision: DecisionConfig.keyTable.names
        case .issuer: IssuerConfig.keyTable.names
        case .introspection: IntrospectionConfig.keyTable.names
        case .client: ClientConfig.keyTable.names
        case .clientTLS: ClientTLS.keyTable.names
        case .upstream: UpstreamConfig.keyTable.names
        case .upstreamTLS: UpstreamTLSConfig.keyTable.names
        case .route: RouteConfig.keyTable.names + StageCatalog.gateway.routeKeys.names
        case .routeMatch: RouteMatch.keyTable.names
        case .routeDPoP: DPoPRouteConfig.keyTable.names
        case .requirement: AuthorizationRequirement.keyTable.names
        case .claimRule: AuthorizationRequirement.claimRuleKeyTable.names
        case .identityAssertion: IdentityAssertionConfig.keyTable.names
        case .mcp: MCPRules.keyTable.names
        case .mcpRule: MCPRules.entryKeyTable.names
        case .tokenExchange: TokenExchangeConfig.keyTable.names
        }
    }

    /// The section's key table, for the sections that declare their keys in one
    /// (`ConfigKeyTable`): each key's reference row as the table says it. Nil for a section
    /// whose keys are still listed in `keys` alone.
    var keyDocs: [ConfigKeyDoc]? {
        switch self {
        case .top: GatewayConfig.keyTable.docs
        case .tokenCache: GatewayConfig.tokenCacheKeyTable.docs
        case .limits: Limits.keyTable.docs
        case .session: SessionConfig.keyTable.docs
        case .login: LoginConfig.keyTable.docs
        case .routeMatch: RouteMatch.keyTable.docs
        case .requirement: AuthorizationRequirement.keyTable.docs
        case .claimRule: AuthorizationRequirement.claimRuleKeyTable.docs
        case .identityAssertion: IdentityAssertionConfig.keyTable.docs
        case .mcp: MCPRules.keyTable.docs
        case .mcpRule: MCPRules.entryKeyTable.docs
        case .tokenExchange: TokenExchangeConfig.keyTable.docs
        case .listen: ListenerConfig.keyTable.docs
        case .adminListen: ListenerConfig.adminKeyTable.docs
        case .listenTLS: ListenerTLS.keyTable.docs
        case .listenTLSCertificate: ListenerTLS.certificateKeyTable.docs
        case .client: ClientConfig.keyTable.docs
        case .clientTLS: ClientTLS.keyTable.docs
        case .issuer: IssuerConfig.keyTable.docs
        case .introspection: IntrospectionConfig.keyTable.docs
        case .decision: DecisionConfig.keyTable.docs
        case .accessLog: AccessLogOutput.keyTable.docs
        case .tracing: TracingConfig.keyTable.docs
        case .store: StoreConfig.keyTable.docs
        case .dpop: DPoPSettings.keyTable.docs
        case .routeDPoP: DPoPRouteConfig.keyTable.docs
        case .upstream: UpstreamConfig.keyTable.docs
        case .upstreamTLS: UpstreamTLSConfig.keyTable.docs
        case .route: RouteConfig.keyTable.docs + StageCatalog.gateway.routeKeys.docs
        default: nil
        }
    }

    /// Each key's full path as docs/configuration.md names it, e.g. `limits.max_body_size`.
    var keyPaths: [String] { keys.map { rawValue.isEmpty ? $0 : "\(rawValue).\($0)" } }
}
