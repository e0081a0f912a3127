import OAuth
import Yams

extension TokenExchangeConfig {
    /// The keys of a route's `token_exchange:`, each said once: its reference row (type and
    /// default, checked against the model's defaults by ConfigReferenceTests) and its row,
    /// read in this order into a `TokenExchangeDraft`. The names of the issuer and clients and
    /// the mode are kept as given, for ConfigParser.tokenExchange to find and combine; the
    /// others are read into the exchange. What the exchange needs of them together is
    /// ConfigValidation's.
    static let keyTable = ConfigKeyTable<TokenExchangeDraft, ConfigReader>([
        .init("issuer", type: "name of an `issuers` entry", default: "none: required") { d, n, p, r in
            d.issuer = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("client", type: "name of a `clients` entry", default: "none: required") { d, n, p, r in
            d.client = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init("endpoint", type: "URL", default: "the issuer's discovered `token_endpoint`") { d, n, p, r in
            guard let endpoint = r.string(n, path: p) else { return }
            if ConfigValues.url(endpoint) == nil { r.problem(p, n, "\"\(endpoint)\" is not an http(s) URL") }
            d.cfg.endpoint = endpoint
        },
        .init("resource", type: "absolute URI, or a list (RFC 8707)", default: "none") { d, n, p, r in
            d.cfg.target.resources = ConfigParser.exchangeNames(n, path: p, r)
            for (i, resource) in d.cfg.target.resources.enumerated() {
                // RFC 8707 §2: an absolute URI without a fragment.
                if case .failure(let problem) = ResourceIdentifier.parse(resource) {
                    r.problem("\(p)[\(i)]", n, "\"\(resource)\" \(problem)")
                }
            }
        },
        .init("audience", type: "string, or a list", default: "none") { d, n, p, r in
            d.targetKeys.append(GivenNode(node: n, path: p))
            d.cfg.target.audiences = ConfigParser.exchangeNames(n, path: p, r)
        },
        .init("scope", type: "space-separated scopes", default: "none: the AS decides") { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            let scopes = s.split(separator: " ")
            if scopes.isEmpty || s.utf8.contains(where: { $0 < 0x21 && $0 != 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                // RFC 6749 §3.3: space-separated NQCHAR tokens.
                r.problem(p, n, "must be space-separated scope tokens")
            } else {
                d.cfg.target.scope = scopes.joined(separator: " ")
            }
        },
        .init(
            "requested_token_type", type: "`access_token` or `jwt`", default: "`access_token`",
            checkedBy: { cell in
                ConfigDefault.firstValue(cell) == "access_token"
                    && TokenExchange.Target().requestedTokenType == TokenExchange.accessTokenType
            }
        ) { d, n, p, r in
            d.targetKeys.append(GivenNode(node: n, path: p))
            guard let s = r.string(n, path: p) else { return }
            switch s {
            case "access_token", TokenExchange.accessTokenType:
                d.cfg.target.requestedTokenType = TokenExchange.accessTokenType
            case "jwt", TokenExchange.jwtTokenType: d.cfg.target.requestedTokenType = TokenExchange.jwtTokenType
            default: r.problem(p, n, "must be access_token or jwt (RFC 8693 §3)")
            }
        },
        .init("margin", type: "duration", default: "`30s`", checkedBy: ConfigDefault.duration(defaults.margin)) {
            d, n, p, r in
            if let v = r.duration(n, path: p) { d.cfg.margin = v }
        },
        .init(
            "default_lifetime", type: "duration", default: "`60s`",
            checkedBy: ConfigDefault.duration(defaults.defaultLifetime)
        ) { d, n, p, r in
            if let v = r.duration(n, path: p) { d.cfg.defaultLifetime = v }
        },
        .init(
            "negative_ttl", type: "duration", default: "`10s`", checkedBy: ConfigDefault.duration(defaults.negativeTTL)
        ) { d, n, p, r in
            if let v = r.duration(n, path: p) { d.cfg.negativeTTL = v }
        },
        .init("dpop", type: "bool", default: "`false`", checkedBy: ConfigDefault.bool(defaults.dpop)) { d, n, p, r in
            d.dpop = n
            if let v = r.bool(n, path: p) { d.cfg.dpop = v }
        },
        .init("mode", type: "`exchange` or `id_jag`", default: "`exchange`") { d, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            d.mode = GivenKey(value: TokenExchangeDraft.Mode(rawValue: s), node: n)
            if d.mode?.value == nil { r.problem(p, n, "must be exchange or id_jag") }
        },
        .init(
            "upstream_issuer", type: "name of an `issuers` entry (the upstream's AS)",
            default: "none: required with `id_jag`"
        ) { d, n, p, r in
            d.upstreamIssuer = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "upstream_client", type: "name of a `clients` entry (the gateway's registration there)",
            default: "none: required with `id_jag`"
        ) { d, n, p, r in
            d.upstreamClient = GivenKey(value: r.string(n, path: p), node: n)
        }
    ])

    /// An exchange with every default (and no issuer or client yet): the reference's default
    /// checks, a draft's start.
    static var defaults: TokenExchangeConfig {
        TokenExchangeConfig(
            route: 0, issuer: "", issuerURL: "",
            client: ClientConfig(name: "", issuer: nil, authentication: .tlsClientAuth(clientID: "")), endpoint: nil,
            caFile: nil, target: TokenExchange.Target())
    }
}

/// A route's `token_exchange:` as its table reads it: the exchange its settings are read into
/// (its issuer and client put in by ConfigParser.tokenExchange), and the names as given.
struct TokenExchangeDraft {
    var cfg = TokenExchangeConfig.defaults
    var issuer: GivenKey<String>?
    var client: GivenKey<String>?
    /// `mode:` (its value nil: not one of the modes, which its row reported).
    var mode: GivenKey<Mode>?
    var upstreamIssuer: GivenKey<String>?
    var upstreamClient: GivenKey<String>?
    // Kept for the checks that point at them: `audience` and `requested_token_type`, which
    // mode id_jag sets itself, and `dpop`.
    var targetKeys: [GivenNode] = []
    var dpop: Node?

    enum Mode: String {
        case exchange
        case idJAG = "id_jag"
    }
}
