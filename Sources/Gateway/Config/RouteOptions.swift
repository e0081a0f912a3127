import JOSE
import OAuth
import Reactor
import Yams

/// Every setting of a route that a stage of its chain reads, grouped by that stage: how a
/// request is admitted (`auth`), which upgrades it may ask for, whether CORS preflights pass,
/// what the upstream request carries, and whether bodies are buffered; plus the settings of
/// stages that declare their own key (`settings`). Read by the route key table below and
/// `ConfigParser.routes`; checked against each other by `ConfigValidation.route`.
struct RouteOptions: Sendable {
    /// `auth:` and the settings of that mode, for the authentication stage `RoutePlan+Stages`
    /// picks by it (`PublicRouteStage`, `TokenStage`, `SessionStage`): see RouteAuth.swift.
    var auth = RouteAuth.none
    var upgrade = Upgrade()
    var cors = CORS()
    var forwarding = Forwarding()
    var buffering = Buffering()
    /// The settings of stages that declare their own route key (`StageCatalog`), by a typed
    /// key each capability declares: put by the key's reader, taken by the stage when its
    /// route's plan is made.
    var settings = RouteSettings()

    /// `UpgradeStage`'s: `upgrades:`.
    struct Upgrade: Sendable {
        /// `upgrades:` the protocols a client may switch to (RFC 9110 §7.8); only `websocket`
        /// exists. Empty: an upgrade request is refused. The default is one set that every
        /// route shares (a literal would make one per route: about 1 MB at 10,000 routes).
        var protocols: Set<String> = Upgrade.websocket
        static let websocket: Set<String> = ["websocket"]
    }

    /// `CORSPreflightStage`'s: `cors_preflight:`.
    struct CORS: Sendable {
        /// `cors_preflight: allow`: a CORS preflight (OPTIONS with Origin and
        /// Access-Control-Request-Method, Fetch §3.2.2) goes upstream unauthenticated.
        var preflight = false
    }

    /// What the upstream request (`RouteResolver.Forwarding`, UpstreamRequest.swift) carries
    /// besides the client's own: `strip_prefix`, `headers`, `pass_access_token`,
    /// `pass_id_token`, `identity_assertion` and `certificate_headers`. The identity headers,
    /// tokens and assertion are made by the authentication stages (IdentityHeaders.swift), the
    /// path and certificate headers when `RequestBufferingStage` makes the request.
    struct Forwarding: Sendable {
        /// `strip_prefix: true`: the matched `path_prefix`, without its trailing `/`, removed
        /// from the path before it goes upstream (the upstream URL's own path is still
        /// prepended).
        var strippedPrefix: String? = nil
        /// `headers:` claims → headers for authenticated requests (default: oauth2-proxy's
        /// names).
        var identityHeaders = IdentityHeaders.standard
        /// `pass_access_token: HEADER`: the session's access token goes upstream in this header
        /// (`Authorization` as `Bearer …`, as `forward_token: true`; any other name bare).
        var passAccessToken: String? = nil
        /// `pass_id_token: HEADER`: the session's ID token goes upstream in this header.
        var passIDToken: String? = nil
        /// `identity_assertion:` a short-lived JWT, signed by the gateway, naming the caller.
        var identityAssertion: IdentityAssertionConfig? = nil
        /// `certificate_headers: { HEADER: subject | uri | sha256 }`: what the client's
        /// verified certificate (mutual TLS) tells the upstream; nothing when the client
        /// presented none.
        var certificateHeaders: [(header: String, field: CertificateField)] = []

        /// The path as it goes upstream (before the upstream URL's own path): with
        /// `strip_prefix`, what follows the prefix — `/api/x` → `/x`, `/api` → `/` — else the
        /// path itself. The router matched the prefix on a segment boundary (`/api` never
        /// matches `/apifoo`).
        func forwardedPath(_ path: String) -> String {
            guard let prefix = strippedPrefix, path.hasPrefix(prefix) else { return path }
            let rest = path.dropFirst(prefix.count)
            return rest.isEmpty ? "/" : String(rest)
        }

        /// Headers this route sets upstream that a client must never send itself, lowercased
        /// (stripped from every request on every route, like identity headers).
        var ownHeaders: [String] {
            var out: [String] = []
            if let h = passAccessToken, h.lowercased() != "authorization" { out.append(h.lowercased()) }
            if let h = passIDToken { out.append(h.lowercased()) }
            if let a = identityAssertion { out.append(a.header.lowercased()) }
            out += certificateHeaders.map { $0.header.lowercased() }
            return out
        }
    }

    /// `RequestBufferingStage`'s and `ProxyStage`'s: `request_buffering:` and `buffering:`.
    struct Buffering: Sendable {
        /// `request_buffering: false`: the client's body streams to the upstream as it comes
        /// (for uploads the upstream reads as they arrive) instead of being read whole first
        /// (`RequestBufferingStage`).
        var request = true
        /// `buffering: false`: the upstream's answer is never spooled to disk for a slow client
        /// (back-pressure pauses the upstream instead), for answers that are streams without
        /// saying so (`ProxyStage`).
        var response = true
    }
}

/// What the readers of a stage's route key (`KeyedStage.routeKey`) are handed besides the
/// key's own value, once the route's own keys are read.
struct RouteKeyContext {
    /// `auth:` as written (`none` when it was missing or wrong: a problem was reported).
    var auth: AuthMode
    /// Whether `match:` parsed: the options are read only then (their checks need the match,
    /// and a route without one is not built).
    var matched: Bool
    var cfg: GatewayConfig
    var r: ConfigReader

    var hasSession: Bool { auth == .login || auth == .login_or_token }
}

extension RouteConfig {
    /// The keys of a `routes[]` entry, each said once: its reference row (type and default,
    /// checked by ConfigReferenceTests) and its row, read in this order into a `RouteDraft`.
    /// `match`, `upstream` and `auth` come first, so the options after them read the match
    /// and the mode; the keys whose meaning depends on the mode are kept as given, for
    /// ConfigParser.routes to combine. Whether a key fits the route's other keys is
    /// ConfigValidation's to say.
    static let keyTable = ConfigKeyTable<RouteDraft, ConfigContext>([
        .init("name", type: "string", default: "`routes[N]`") { d, n, p, c in
            if let s = c.r.string(n, path: p) { d.route.name = s }
        },
        .init(
            "match", type: "mapping (below)", default: "none: required",
            reader: .always { d, n, p, c in
                guard let match = ConfigParser.routeMatch(n, path: p, item: d.item, c.r) else { return }
                d.route.match = match
                d.matched = true
            }),
        .init(
            "upstream", type: "an `upstreams:` name", default: "none: required",
            reader: .always { d, n, p, c in ConfigParser.routeUpstream(&d, n, path: p, c) }),
        .init(
            "auth", type: "`none`, `bearer`, `dpop`, `token`, `login`, `login_or_token` or `api_key`",
            default: "none: required",
            reader: .always { d, n, p, c in
                guard let n else {
                    c.r.problem(p, d.item, "is missing; say auth: none explicitly for a public route")
                    return
                }
                guard let s = c.r.string(n, path: p) else { return }
                if let a = AuthMode(rawValue: s) {
                    d.auth = a
                } else {
                    c.r.problem(p, n, "must be one of \(AuthMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            }),
        given(
            "api_keys", type: "an `api_keys:` name, or a list of them", default: "none (required for `api_key`)",
            \.apiKeys),
        given("issuers", type: "list of `issuers:` names", default: "none (required for token routes)", \.issuers),
        given("client", type: "a `clients:` name", default: "none (a login route needs it or `clients`)", \.client),
        given("clients", type: "list of `clients:` names", default: "none", \.clients),
        given("require", type: "mapping (below)", default: "no rule", \.require),
        .init(
            "headers", type: "mapping of header name to claim path or `{variable}`",
            default:
                "`X-Forwarded-User: sub`, `X-Forwarded-Email: email`, `X-Forwarded-Groups: groups`, `X-Forwarded-Preferred-Username: preferred_username`"
        ) { d, n, p, c in
            d.keys.headers = GivenNode(node: n, path: p)
            if let h = ConfigParser.identityHeaders(n, path: p, match: d.matched ? d.route.match.path : nil, c.r) {
                d.route.options.forwarding.identityHeaders = h
            }
        },
        given("forward_token", type: "bool", default: "`false`", \.forwardToken),
        given("token_in_query", type: "bool", default: "`false`", \.tokenInQuery),
        given("token_in_body", type: "bool", default: "`false`", \.tokenInBody),
        given("dpop", type: "mapping (below)", default: "each key's default", \.dpop),
        .init("upgrades", type: "list: `websocket`, or `[]`", default: "`[websocket]`") { d, n, p, c in
            d.keys.upgrades = GivenNode(node: n, path: p)
            d.route.options.upgrade.protocols = ConfigParser.routeUpgrades(n, path: p, c.r)
        },
        given("close_at_token_expiry", type: "bool", default: "`false`", \.closeAtTokenExpiry),
        .init(
            "strip_prefix", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(RouteOptions().forwarding.strippedPrefix != nil)
        ) { d, n, p, c in
            guard d.matched else { return }
            ConfigParser.stripPrefix(n, path: p, &d.route, c.r)
        },
        .init("cors_preflight", type: "`allow`", default: "off") { d, n, p, c in
            d.keys.corsPreflight = GivenNode(node: n, path: p)
            guard d.matched, let s = c.r.string(n, path: p) else { return }
            if s == "allow" {
                d.route.options.cors.preflight = true
            } else {
                c.r.problem(p, n, "must be allow (CORS preflights pass unauthenticated), or leave it out")
            }
        },
        .init("pass_access_token", type: "header name, or `Authorization`", default: "none") { d, n, p, c in
            d.keys.passAccessToken = GivenNode(node: n, path: p)
            // Without a session ConfigValidation reports the key, and only that.
            guard d.matched, d.hasSession, let h = c.r.string(n, path: p) else { return }
            if ConfigParser.headerName(h, path: p, n, allowAuthorization: true, c.r) {
                d.route.options.forwarding.passAccessToken = h
            }
        },
        .init("pass_id_token", type: "header name", default: "none") { d, n, p, c in
            d.keys.passIDToken = GivenNode(node: n, path: p)
            guard d.matched, d.hasSession, let h = c.r.string(n, path: p) else { return }
            if ConfigParser.headerName(h, path: p, n, allowAuthorization: false, c.r) {
                d.route.options.forwarding.passIDToken = h
            }
        },
        .init("identity_assertion", type: "mapping (below)", default: "none") { d, n, p, c in
            d.keys.identityAssertion = GivenNode(node: n, path: p)
            guard d.matched else { return }
            d.route.options.forwarding.identityAssertion = ConfigParser.identityAssertion(
                n, path: p, route: d.route, auth: d.auth, cfg: c.cfg, c.r)
        },
        given(
            "resource", type: "absolute https URL (RFC 8707; http only for a loopback host)", default: "none",
            \.resource),
        given("resource_name", type: "string", default: "none", \.resourceName),
        given("resource_documentation", type: "URL", default: "none", \.resourceDocumentation),
        given("mcp", type: "mapping (below)", default: "none: the body is not read", \.mcp),
        given("token_exchange", type: "mapping (below)", default: "none: no exchange", \.tokenExchange),
        .init(
            "buffering", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(RouteOptions().buffering.response)
        ) { d, n, p, c in
            if d.matched, let b = c.r.bool(n, path: p) { d.route.options.buffering.response = b }
        },
        .init(
            "request_buffering", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(RouteOptions().buffering.request)
        ) { d, n, p, c in
            if d.matched, let b = c.r.bool(n, path: p) { d.route.options.buffering.request = b }
        },
        .init(
            "certificate_headers", type: "mapping of header name to `subject`, `uri` or `sha256`", default: "none"
        ) { d, n, p, c in
            d.keys.certificateHeaders = GivenNode(node: n, path: p)
            if d.matched {
                d.route.options.forwarding.certificateHeaders = ConfigParser.certificateHeaders(n, path: p, c.r)
            }
        }
    ])

    /// A key kept as given: what it means waits for `auth:` (ConfigParser.routes).
    private static func given(
        _ name: String, type: String, default defaultText: String,
        _ field: WritableKeyPath<RouteKeys, GivenNode?> & Sendable
    ) -> ConfigKey<RouteDraft, ConfigContext> {
        .init(name, type: type, default: defaultText) { d, n, p, _ in
            d.keys[keyPath: field] = GivenNode(node: n, path: p)
        }
    }
}

/// A field of a client certificate an upstream can be told.
enum CertificateField: String, Sendable, CaseIterable {
    /// The subject, RFC 4514 (`CN=billing,O=Example`).
    case subject
    /// The first subjectAltName URI: a SPIFFE ID (`spiffe://example.org/ns/prod/sa/billing`).
    case uri
    /// The SHA-256 of the certificate, base64url: what a bound token's `cnf.x5t#S256` says.
    case sha256

    func value(of c: ClientCertificate) -> String? {
        switch self {
        case .subject: c.subject.isEmpty ? nil : c.subject
        case .uri: c.uris.first
        case .sha256: Base64URL.encode(c.sha256)
        }
    }
}

/// `identity_assertion:` of a route (Pomerium's `X-Pomerium-Jwt-Assertion`): lets an upstream
/// that other paths can also reach prove a request came through the gateway.
struct IdentityAssertionConfig: Sendable {
    static let defaultHeader = "X-Tokengate-Assertion"
    var header = IdentityAssertionConfig.defaultHeader
    /// Seconds from iat to exp.
    var lifetime = 60.0
    /// `aud`: the route's upstream URL unless configured.
    var audience: String
    /// `iss`: the gateway's (first) public_url.
    var issuer: String
}

/// One of `identity_assertion_keys`: a private key and the algorithm it signs with.
struct AssertionKey: Sendable {
    var key: JWK
    var alg: JWSAlgorithm
}
