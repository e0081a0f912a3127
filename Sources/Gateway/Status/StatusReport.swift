import Foundation

/// What the admin listener's status page shows (`/status`, `/status.json`): when the process
/// started, the config's generation and reloads, routes and their answers, issuers, upstream
/// pools, the store, tunnels and the build.
/// Built from an allow-list of fields, so nothing secret in the config (client secrets,
/// private keys, session and nonce keys, store passwords, header values) can reach it: a
/// field is shown only if it is copied here by name.
struct StatusReport: Sendable {
    struct Route: Sendable {
        var name: String
        /// The `host:` pattern as written (`api.example`, `*.example`); nil: any host.
        var host: String?
        var path: String
        /// `exact`, `prefix` or `template` (then `path` is the template).
        var match: String
        var methods: [String]
        var upstream: String
        /// The `auth:` mode as written: none, bearer, dpop, token, login, login_or_token.
        var auth: String
        var issuers: [String]
        var clients: [String]
        /// Its answers by status class, every worker's added up (by name, as /metrics counts).
        var answers = RouteAnswers()
    }

    struct Issuer: Sendable {
        var name: String
        /// The `iss` its tokens carry (the parser refuses a URL with user-info).
        var issuer: String
        /// discovery, jwks_uri or jwks_file.
        var keysFrom: String
        var introspection: Bool
        var keys: IssuerKeyState
    }

    struct Upstream: Sendable {
        var name: String
        /// scheme://host:port/base-path.
        var url: String
        var pool: UpstreamStatus
    }

    /// A certificate a TLS listener serves (never its key).
    struct Certificate: Sendable {
        var listen: String
        var file: String
        /// The leaf's notAfter, seconds since the epoch.
        var notAfter: Double
        /// The leaf's SHA-256 fingerprint, hex.
        var sha256: String
    }

    enum Store: Sendable {
        case memory
        /// `deployment`: the URL with passwords masked.
        case redis(
            deployment: String, up: Bool, role: String?, latency: Double?, lastError: String?, checkedAt: Double?)
    }

    var version: String
    /// Wall-clock seconds when the report was made.
    var generatedAt: Double
    /// Wall-clock seconds when the process started, and the seconds it has run since (by the
    /// monotonic clock: a wall clock set back or forward does not change it).
    var startedAt: Double
    var uptime: Double
    var history: ConfigHistory
    /// Generation each worker runs now.
    var workerGenerations: [Int]
    var routes: [Route]
    var issuers: [Issuer]
    var upstreams: [Upstream]
    var store: Store
    var tunnelsOpen: Int
    var clientConnections: Int
    var inflight: Int
    var certificates: [Certificate] = []
    /// The modules' sections (`GatewayModule`), in catalog order.
    var moduleSections: [StatusSection] = []

    /// `started`: when the process started (wall clock) and how long it has run.
    init(
        version: String, now: Double, started: (at: Double, uptime: Double), config: GatewayConfig,
        history: ConfigHistory, issuerKeys: [String: IssuerKeyState], store: Store, workers: WorkerStatus,
        certificates: [Certificate] = [], modules: ModuleMains? = nil
    ) {
        self.certificates = certificates
        self.version = version
        generatedAt = now
        startedAt = started.at
        uptime = started.uptime
        self.history = history
        workerGenerations = workers.generations
        routes = config.routes.map { r in
            var route = Self.route(r)
            route.answers = workers.routes[r.name] ?? RouteAnswers()
            return route
        }
        issuers = config.issuers.values.sorted { $0.name < $1.name }.map { issuer in
            let from: String
            switch issuer.keys {
            case .discovery: from = "discovery"
            case .jwksURI: from = "jwks_uri"
            case .jwksFile: from = "jwks_file"
            case .own: from = "authorization_server"
            }
            return Issuer(
                name: issuer.name, issuer: issuer.issuer, keysFrom: from,
                introspection: issuer.introspection != nil, keys: issuerKeys[issuer.name] ?? IssuerKeyState())
        }
        upstreams = config.upstreams.values.sorted { $0.name < $1.name }.map { up in
            Upstream(
                name: up.name,
                url:
                    "\(up.tls == nil ? "http" : "https")://\(SocketAddress(host: up.host, port: up.port))\(up.basePath)",
                pool: workers.upstreams[up.name] ?? UpstreamStatus())
        }
        self.store = store
        moduleSections = modules?.sections(config, workers.modules, now: now) ?? workers.modules.sections(config)
        tunnelsOpen = workers.tunnelsOpen
        clientConnections = workers.clientConnections
        inflight = workers.inflight
    }

    private static func route(_ r: RouteConfig) -> Route {
        let path: String
        let match: String
        switch r.match.path {
        case .exact(let p): (path, match) = (p, "exact")
        case .prefix(let p): (path, match) = (p, "prefix")
        case .template(let t): (path, match) = (t.text, "template")
        }
        let host: String? =
            switch r.match.host {
            case .exact(let name): name
            case .wildcard(let suffix): "*" + suffix
            case nil: nil
            }
        return Route(
            name: r.name, host: host, path: path, match: match,
            methods: r.match.methods.map { $0.map(\.rawValue).sorted() } ?? [], upstream: r.upstream,
            auth: authMode(r.options.auth).rawValue, issuers: r.options.auth.tokenRoute?.issuers ?? [],
            clients: r.options.auth.loginRoute?.clients ?? [])
    }

    static func authMode(_ auth: RouteAuth) -> AuthMode {
        switch auth {
        case .none: .none
        case .login: .login
        case .loginOrToken: .login_or_token
        case .tokens(let t) where t.keysOnly: .api_key
        case .tokens(let t):
            switch t.schemes {
            case .bearer: .bearer
            case .dpop: .dpop
            case .bearerOrDPoP: .token
            }
        }
    }
}
