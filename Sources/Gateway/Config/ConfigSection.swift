import OAuth

/// The mappings of the config file whose keys are fixed, each with the keys it accepts, as
/// its `ConfigKeyTable` declares them.
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
    case upstreamSign = "upstreams.NAME.sign"
    case upstreamCredentials = "upstreams.NAME.credentials"
    case upstreamCredentialHeader = "upstreams.NAME.credentials.header"
    case upstreamCredentialGrant = "upstreams.NAME.credentials.client_credentials"
    case responseSign = "routes[].sign_response"
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
    case rateLimit = "rate_limits.NAME"
    case rateLimitOverride = "rate_limits.NAME.overrides.VALUE"
    case authorizer = "authorizers.NAME"
    case authorizerAuth = "authorizers.NAME.auth"
    case authorizerCache = "authorizers.NAME.cache"
    case authorizerSubject = "authorizers.NAME.subject"
    case signature = "signatures.NAME"
    case signatureKeys = "signatures.NAME.keys"
    case signatureHeaders = "signatures.NAME.headers"
    case apiKeySet = "api_keys.NAME"
    case transmitter = "shared_signals.NAME"
    case transmitterAuth = "shared_signals.NAME.auth"
    case authorizationServer = "authorization_server"
    case asClients = "authorization_server.clients"
    case asIDJAG = "authorization_server.id_jag"

    /// The keys, in the order check-config lists them when one is unknown: the table's.
    var keys: [String] { keyDocs.map(\.name) }

    /// Each key's reference row as the section's key table (`ConfigKeyTable`, its model's
    /// `keyTable`) says it.
    var keyDocs: [ConfigKeyDoc] {
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
        case .rateLimit: RateLimitPolicy.keyTable.docs
        case .rateLimitOverride: RateLimitPolicy.overrideKeyTable.docs
        case .authorizer: AuthorizerConfig.keyTable.docs
        case .authorizerAuth: AuthorizerConfig.authKeyTable.docs
        case .authorizerCache: AuthorizerConfig.cacheKeyTable.docs
        case .authorizerSubject: AuthorizerConfig.subjectKeyTable.docs
        case .apiKeySet: APIKeySetConfig.keyTable.docs
        case .transmitter: TransmitterConfig.keyTable.docs
        case .transmitterAuth: TransmitterConfig.authKeyTable.docs
        case .authorizationServer: AuthorizationServerConfig.keyTable.docs
        case .asClients: AuthorizationServerConfig.clientsKeyTable.docs
        case .asIDJAG: AuthorizationServerConfig.idJAGKeyTable.docs
        case .signature: SignaturePolicy.keyTable.docs
        case .upstreamSign: MessageSigningConfig.keyTable.docs
        case .responseSign: MessageSigningConfig.responseKeyTable.docs
        case .signatureKeys: SignaturePolicy.keysKeyTable.docs
        case .signatureHeaders: SignaturePolicy.headersKeyTable.docs
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
        case .upstreamCredentials: UpstreamCredentialsConfig.keyTable.docs
        case .upstreamCredentialHeader: UpstreamCredentialsConfig.headerKeyTable.docs
        case .upstreamCredentialGrant: UpstreamCredentialsConfig.grantKeyTable.docs
        case .route: RouteConfig.keyTable.docs + StageCatalog.gateway.routeKeys.docs
        }
    }

    /// Each key's full path as docs/configuration.md names it, e.g. `limits.max_body_size`.
    var keyPaths: [String] { keys.map { rawValue.isEmpty ? $0 : "\(rawValue).\($0)" } }
}
