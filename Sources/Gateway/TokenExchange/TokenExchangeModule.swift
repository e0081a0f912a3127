import OAuth

/// Token exchange as a module (`token_exchange:` on token routes, RFC 8693): its section, the
/// process's exchanged tokens (one exchange per subject token in the process), each worker's
/// `TokenExchanger`, told of the issuers' token endpoints, and `TokenExchangeStage` before the
/// upstream request is made. The route key is read with the route's `auth` (it depends on it).
enum TokenExchangeModule: GatewayModule {
    static let sections = [ConfigSection.tokenExchange]
    static let stages: [any ModuleStage.Type] = [TokenExchangeStage.self]

    static func makeShared(_ stores: StoreBackend) -> ExchangedTokens { ExchangedTokens() }

    static func makeService(_ shared: ExchangedTokens, _ context: ModuleContext) -> TokenExchanger {
        TokenExchanger(
            loop: context.loop, wallClock: context.wallClock,
            shared: context.stores.sharedAnswers(.exchange, for: context.loop), process: shared)
    }
}

extension TokenExchanger: ModuleService {
    func discovered(issuer: String, metadata: ProviderMetadata) {
        discoveredEndpoints[issuer] = metadata.tokenEndpoint
        discoveredMTLSEndpoints[issuer] = metadata.usingMTLSAliases().tokenEndpoint
    }
}

extension ConfigSection {
    static let tokenExchange = ConfigSection("routes[].token_exchange") { TokenExchangeConfig.keyTable.docs }
}

extension WorkerServices {
    /// Routes with `token_exchange`: the caller's token traded for the upstream's.
    var exchanger: TokenExchanger { modules[TokenExchangeModule.self] }
}
