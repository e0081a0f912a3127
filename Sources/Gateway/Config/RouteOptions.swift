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
        /// exists. Empty: an upgrade request is refused.
        var protocols: Set<String> = ["websocket"]
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

/// What the readers of a route's keys are handed besides the key's own value.
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
    /// checked by ConfigReferenceTests) and its reader. The plain options are read here, in
    /// this order, once the route's match, upstream and auth are known; the others by the
    /// reader named. Whether a key fits the route's other keys is ConfigValidation's to say.
    static let keyTable = ConfigKeyTable<RouteConfig, RouteKeyContext>([
        .init("name", type: "string", default: "`routes[N]`") { route, n, p, c in
            if let s = c.r.string(n, path: p) { route.name = s }
        },
        .init("match", type: "mapping (below)", default: "none: required", by: "ConfigParser.routeMatch"),
        .init("upstream", type: "an `upstreams:` name", default: "none: required", by: "ConfigParser.routes"),
        .init(
            "auth", type: "`none`, `bearer`, `dpop`, `token`, `login`, `login_or_token` or `api_key`",
            default: "none: required", by: "ConfigParser.routes"),
        .init(
            "api_keys", type: "an `api_keys:` name, or a list of them", default: "none (required for `api_key`)",
            by: "ConfigParser.tokenRoute"),
        .init(
            "issuers", type: "list of `issuers:` names", default: "none (required for token routes)",
            by: "ConfigParser.tokenRoute"),
        .init(
            "client", type: "a `clients:` name", default: "none (a login route needs it or `clients`)",
            by: "ConfigParser.loginClients"),
        .init("clients", type: "list of `clients:` names", default: "none", by: "ConfigParser.loginClients"),
        .init("require", type: "mapping (below)", default: "no rule", by: "ConfigParser.requirement"),
        .init(
            "headers", type: "mapping of header name to claim path or `{variable}`",
            default:
                "`X-Forwarded-User: sub`, `X-Forwarded-Email: email`, `X-Forwarded-Groups: groups`, `X-Forwarded-Preferred-Username: preferred_username`"
        ) { route, n, p, c in
            if let h = ConfigParser.identityHeaders(n, path: p, match: c.matched ? route.match.path : nil, c.r) {
                route.options.forwarding.identityHeaders = h
            }
        },
        .init("forward_token", type: "bool", default: "`false`", by: "ConfigParser.tokenRoute"),
        .init("token_in_query", type: "bool", default: "`false`", by: "ConfigParser.tokenRoute"),
        .init("token_in_body", type: "bool", default: "`false`", by: "ConfigParser.tokenRoute"),
        .init("dpop", type: "mapping (below)", default: "each key's default", by: "ConfigParser.dpopRoute"),
        .init("upgrades", type: "list: `websocket`, or `[]`", default: "`[websocket]`") { route, n, p, c in
            route.options.upgrade.protocols = ConfigParser.routeUpgrades(n, path: p, c.r)
        },
        .init("close_at_token_expiry", type: "bool", default: "`false`", by: "ConfigParser.tokenRoute"),
        .init(
            "strip_prefix", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(RouteOptions().forwarding.strippedPrefix != nil)
        ) { route, n, p, c in
            guard c.matched else { return }
            ConfigParser.stripPrefix(n, path: p, &route, c.r)
        },
        .init("cors_preflight", type: "`allow`", default: "off") { route, n, p, c in
            guard c.matched, let s = c.r.string(n, path: p) else { return }
            if s == "allow" {
                route.options.cors.preflight = true
            } else {
                c.r.problem(p, n, "must be allow (CORS preflights pass unauthenticated), or leave it out")
            }
        },
        .init("pass_access_token", type: "header name, or `Authorization`", default: "none") { route, n, p, c in
            // Without a session ConfigValidation reports the key, and only that.
            guard c.matched, c.hasSession, let h = c.r.string(n, path: p) else { return }
            if ConfigParser.headerName(h, path: p, n, allowAuthorization: true, c.r) {
                route.options.forwarding.passAccessToken = h
            }
        },
        .init("pass_id_token", type: "header name", default: "none") { route, n, p, c in
            guard c.matched, c.hasSession, let h = c.r.string(n, path: p) else { return }
            if ConfigParser.headerName(h, path: p, n, allowAuthorization: false, c.r) {
                route.options.forwarding.passIDToken = h
            }
        },
        .init("identity_assertion", type: "mapping (below)", default: "none") { route, n, p, c in
            guard c.matched else { return }
            route.options.forwarding.identityAssertion = ConfigParser.identityAssertion(
                n, path: p, route: route, auth: c.auth, cfg: c.cfg, c.r)
        },
        .init(
            "resource", type: "absolute https URL (RFC 8707; http only for a loopback host)", default: "none",
            by: "ConfigParser.protectedResource"),
        .init("resource_name", type: "string", default: "none", by: "ConfigParser.protectedResource"),
        .init("resource_documentation", type: "URL", default: "none", by: "ConfigParser.protectedResource"),
        .init("mcp", type: "mapping (below)", default: "none: the body is not read", by: "ConfigParser.mcpRules"),
        .init(
            "token_exchange", type: "mapping (below)", default: "none: no exchange", by: "ConfigParser.tokenExchange"),
        .init(
            "buffering", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(RouteOptions().buffering.response)
        ) { route, n, p, c in
            if c.matched, let b = c.r.bool(n, path: p) { route.options.buffering.response = b }
        },
        .init(
            "request_buffering", type: "bool", default: "`true`",
            checkedBy: ConfigDefault.bool(RouteOptions().buffering.request)
        ) { route, n, p, c in
            if c.matched, let b = c.r.bool(n, path: p) { route.options.buffering.request = b }
        },
        .init(
            "certificate_headers", type: "mapping of header name to `subject`, `uri` or `sha256`", default: "none"
        ) { route, n, p, c in
            if c.matched {
                route.options.forwarding.certificateHeaders = ConfigParser.certificateHeaders(n, path: p, c.r)
            }
        }
    ])
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
