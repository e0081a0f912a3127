import OAuth
import Yams

extension TokenExchangeConfig {
    /// The keys of a route's `token_exchange:`, each said once: its reference row (type and
    /// default, checked against the model's defaults by ConfigReferenceTests) and its reader.
    /// The issuer, client and endpoint are read by ConfigParser.tokenExchange, which builds
    /// the exchange from them; the others here, in this order. What the exchange needs of
    /// them together is ConfigValidation's.
    static let keyTable = ConfigKeyTable<TokenExchangeConfig, ConfigReader>([
        .init(
            "issuer", type: "name of an `issuers` entry", default: "none: required", by: "ConfigParser.tokenExchange"),
        .init("client", type: "name of a `clients` entry", default: "none: required", by: "ConfigParser.tokenExchange"),
        .init(
            "endpoint", type: "URL", default: "the issuer's discovered `token_endpoint`",
            by: "ConfigParser.tokenExchange"),
        .init("resource", type: "absolute URI, or a list (RFC 8707)", default: "none") { x, n, p, r in
            x.target.resources = ConfigParser.exchangeNames(n, path: p, r)
            for (i, resource) in x.target.resources.enumerated() {
                // RFC 8707 §2: an absolute URI without a fragment.
                if case .failure(let problem) = ResourceIdentifier.parse(resource) {
                    r.problem("\(p)[\(i)]", n, "\"\(resource)\" \(problem)")
                }
            }
        },
        .init("audience", type: "string, or a list", default: "none") { x, n, p, r in
            x.target.audiences = ConfigParser.exchangeNames(n, path: p, r)
        },
        .init("scope", type: "space-separated scopes", default: "none: the AS decides") { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let scopes = s.split(separator: " ")
            if scopes.isEmpty || s.utf8.contains(where: { $0 < 0x21 && $0 != 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                // RFC 6749 §3.3: space-separated NQCHAR tokens.
                r.problem(p, n, "must be space-separated scope tokens")
            } else {
                x.target.scope = scopes.joined(separator: " ")
            }
        },
        .init(
            "requested_token_type", type: "`access_token` or `jwt`", default: "`access_token`",
            checkedBy: { cell in
                ConfigDefault.firstValue(cell) == "access_token"
                    && TokenExchange.Target().requestedTokenType == TokenExchange.accessTokenType
            }
        ) { x, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            switch s {
            case "access_token", TokenExchange.accessTokenType:
                x.target.requestedTokenType = TokenExchange.accessTokenType
            case "jwt", TokenExchange.jwtTokenType: x.target.requestedTokenType = TokenExchange.jwtTokenType
            default: r.problem(p, n, "must be access_token or jwt (RFC 8693 §3)")
            }
        },
        .init("margin", type: "duration", default: "`30s`", checkedBy: ConfigDefault.duration(defaults.margin)) {
            x, n, p, r in
            if let v = r.duration(n, path: p) { x.margin = v }
        },
        .init(
            "default_lifetime", type: "duration", default: "`60s`",
            checkedBy: ConfigDefault.duration(defaults.defaultLifetime)
        ) { x, n, p, r in
            if let v = r.duration(n, path: p) { x.defaultLifetime = v }
        },
        .init(
            "negative_ttl", type: "duration", default: "`10s`", checkedBy: ConfigDefault.duration(defaults.negativeTTL)
        ) { x, n, p, r in
            if let v = r.duration(n, path: p) { x.negativeTTL = v }
        },
        .init("dpop", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(defaults.dpop)) { x, n, p, r in
            if let v = r.bool(n, path: p) { x.dpop = v }
        },
        .init(
            "mode", type: "`exchange` or `id_jag`", default: "`exchange`", by: "ConfigParser.tokenExchange"),
        .init(
            "upstream_issuer", type: "name of an `issuers` entry (the upstream's AS)",
            default: "none: required with `id_jag`",
            by: "ConfigParser.tokenExchange"),
        .init(
            "upstream_client", type: "name of a `clients` entry (the gateway's registration there)",
            default: "none: required with `id_jag`", by: "ConfigParser.tokenExchange")
    ])

    /// An exchange with every default, for the reference's default checks.
    private static var defaults: TokenExchangeConfig {
        TokenExchangeConfig(
            route: 0, issuer: "", issuerURL: "",
            client: ClientConfig(name: "", issuer: nil, authentication: .tlsClientAuth(clientID: "")), endpoint: nil,
            caFile: nil, target: TokenExchange.Target())
    }
}
