import OAuth
import Reactor

/// The whole configuration, validated: every value here has passed `ConfigParser`.
/// Plain values; a reload builds a new one and swaps it in.
public struct GatewayConfig: Sendable {
    var listeners: [ListenerConfig] = []
    /// `/healthz`, `/readyz`, `/metrics`; never served on the public listeners.
    var adminListen: SocketAddress? = SocketAddress(host: "127.0.0.1", port: 9901)
    /// `admin_listen.tls`: the admin endpoints over TLS (plain HTTP without).
    var adminTLS: ListenerTLS?
    /// The admin listener as the certificates see it (HTTP/1.1 only).
    var adminListener: ListenerConfig? { adminListen.map { ListenerConfig(address: $0, tls: adminTLS, http2: false) } }
    public internal(set) var workers: Int = 1
    /// What the modules' keys say (`GatewayModule`), and the catalog they were read with.
    var modules = ModuleConfigs()
    var trustedProxies: [CIDR] = []
    var limits = Limits()
    var accessLog = AccessLogConfig.on(AccessLogOutput())
    /// OpenTelemetry traces over OTLP/HTTP (`tracing`, `OTEL_*`); nil: off.
    var tracing: TracingConfig? = nil
    public internal(set) var logLevel = "info"
    /// `forward_early_hints`: which clients hear an upstream's interim responses.
    var earlyHints = EarlyHintsForwarding.auto
    /// Where shared state lives (DPoP jti replay entries): this process, or Redis.
    var store = StoreConfig.memory
    /// How clients address the gateway (`public_url`: one origin or several): what a DPoP
    /// proof's `htu` must name. Empty: a trusted proxy's X-Forwarded-Proto/-Host say it —
    /// never a client's own Host header.
    var publicURLs: [PublicURL] = []
    var dpop = DPoPSettings()
    /// What the config allows but a reviewer should know (ConfigWarnings.swift): printed by
    /// check-config and logged at start and on every reload; never a reason to refuse.
    public internal(set) var warnings: [ConfigProblem] = []
    var session = SessionConfig()
    var login = LoginConfig()
    /// `decision:` — the verdict endpoints for ingresses (nginx auth_request, forward auth,
    /// Envoy ext_authz); off unless configured.
    var decision = DecisionConfig()
    /// `pages_dir:` — the HTML pages shown to browsers (built-in unless replaced).
    var pages = Pages()
    /// Prefix of headers reserved for the gateway's identity headers: client-sent ones are
    /// always removed (strip, then inject: docs/architecture.md, "Request path").
    var reservedHeaderPrefix: String? = nil
    /// `trusted_proxy_headers`: more names (lowercased) that, like the built-in override
    /// headers (`HeaderRules.trustedOnly`), only a trusted proxy may send. Additions only:
    /// the built-in list cannot be shortened.
    var trustedProxyHeaders: [[UInt8]] = []
    /// How many upstreams and routes the file defines (what `check-config` reports).
    public var upstreamCount: Int { upstreams.count }
    public var routeCount: Int { routes.count }
    var upstreams: [String: UpstreamConfig] = [:]
    var routes: [RouteConfig] = []
    var issuers: [String: IssuerConfig] = [:]
    /// RFC 9728 metadata of the routes with a `resource`, by the path each is served at.
    var protectedResources: [String: ProtectedResourceDocument] = [:]
    /// Per-worker cache of verified tokens; 0 entries disables it.
    var tokenCacheEntries = 10_000
    var tokenCacheTTL = 120.0
    var issuerNames: [String] { issuers.keys.sorted() }
    var clients: [String: ClientConfig] = [:]
    var clientNames: [String] { clients.keys.sorted() }

    /// What follows from the keys above, for the request path: set by `finish()`.
    private(set) var runtime = RuntimeConfig()

    init() {}

    /// Derives `runtime` from the keys, once they are read and valid.
    mutating func finish() { runtime = RuntimeConfig(self) }

    /// The cookie names the gateway sets, with their chunk names: removed from requests before
    /// they go upstream (`RuntimeConfig`).
    var ownCookieNames: Set<String> { runtime.ownCookieNames }
    /// `reserved_header_prefix` lowercased, as the header rules compare it.
    var reservedHeaderPrefixBytes: [UInt8]? { runtime.reservedHeaderPrefixBytes }
    /// Identity header names stripped from every client request on every route, lowercased.
    var strippedIdentityHeaders: [[UInt8]] {
        get { runtime.strippedIdentityHeaders }
        set { runtime.strippedIdentityHeaders = newValue }
    }
}

/// `store:` — `memory`, or a Redis server (`redis://[[user]:password@]host[:port][/db]`)
/// whose keys all start with `prefix`.
enum StoreConfig: Sendable, Equatable {
    case memory
    case redis(url: String, prefix: String)
}

/// The external origin of the gateway: `https://api.example.com[:port]`.
struct PublicURL: Sendable, Equatable {
    var scheme: String
    var authority: String
}

struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    var host: String
    var port: UInt16
    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

struct ListenerConfig: Sendable {
    var address: SocketAddress
    var tls: ListenerTLS?
    /// HTTP/2 next to HTTP/1.1: `h2` offered in ALPN on TLS, prior knowledge on plain TCP.
    /// On by default with TLS, off without (`listen[].http2`).
    var http2: Bool

    init(address: SocketAddress, tls: ListenerTLS?, http2: Bool? = nil) {
        self.address = address
        self.tls = tls
        self.http2 = http2 ?? (tls != nil)
    }
}

/// A listener's `tls:`: its profile and the certificates it serves (the first for clients
/// without SNI), read again on SIGHUP and when the files change.
struct ListenerTLS: Sendable, Equatable {
    var profile: TLSProfile = .intermediate
    var certificates: [TLSCertificateFiles]
    /// How often the files are looked at for a change (`watch:`); nil: only on SIGHUP.
    var watchInterval: Double? = 5
    /// Mutual TLS (`client_ca_file`): nil when clients are not asked for certificates.
    var clients: ClientCertificates?
}

/// A listener's client-certificate settings (RFC 8705 §3): the CAs a certificate must chain
/// to, the CRLs that revoke leaves, and whether a client must present one.
struct ClientCertificates: Sendable, Equatable {
    var caFile: String
    var crlFile: String?
    var required: Bool
}

struct Limits: Sendable {
    /// A request body's whole length, but a gRPC call's (`grpcMaxMessageSize` bounds it).
    var maxBodySize = 4 << 20
    /// `grpc_max_message_size`: the most bytes one message of a gRPC or gRPC-Web call may
    /// carry after its 5-byte prefix, as gRPC's own `max_receive_message_length` (4 MiB).
    var grpcMaxMessageSize = 4 << 20
    var maxHeaderSize = 32 << 10
    var clientIdleTimeout = 60.0
    var shutdownGrace = 30.0
    /// Client connections per process; past it the listeners stop accepting until one closes.
    var maxConnections = 10_000
    /// A client that has not sent a whole request head by then gets 408 and is closed
    /// (slowloris).
    var headerTimeout = 10.0
    /// No request body byte for this long: the exchange fails and the connection closes.
    var bodyTimeout = 30.0
    /// `body_deadline`: the most a whole request body may take (nil: off, the rate bounds it).
    /// On by default: at `body_min_rate` alone, a body of `max_body_size` that is mostly
    /// sent at once and then trickled holds its part of `request_spool_total` for an hour.
    var bodyDeadline: Double? = 300
    /// `body_min_rate`: bytes per second a request body must average once
    /// `body_min_rate_grace` has passed (0: off). Past either: 408, both connections closed.
    var bodyMinRate = 1024
    var bodyMinRateGrace = 5.0
    /// How long a proxied body whose client sent `Expect: 100-continue` waits on the
    /// upstream's 100 (or its refusal) before the gateway says 100 itself and sends it anyway
    /// (RFC 9110 §10.1.1); 0: the upstream is not asked, the gateway says 100 at once.
    var continueTimeout = 1.0
    /// A tunnel (WebSocket) with no byte either way for this long is closed.
    var tunnelIdleTimeout = 300.0
    /// Tunnels per process (shared evenly among workers); an upgrade past it gets 503.
    var maxTunnels = 10_000
    /// Proxy buffering (ResponseSpool): how far a client may be behind before the rest
    /// of an answer goes to a temp file in `spoolDirectory`, and how much disk one answer and
    /// the whole process may use for that (0: never spool).
    var responseBuffer = 64 << 10
    /// Request buffering (RequestBufferingStage): how much of a body is kept in memory
    /// before the rest goes to a temp file.
    var requestBuffer = 64 << 10
    /// Disk the request bodies being read may hold at once, per process (0: bodies stream):
    /// a budget of their own, so that bodies cannot use up the spooled answers' (nor the
    /// reverse).
    var requestSpoolTotal = 1 << 30
    /// `request_spool_per_client`: the share of `requestSpoolTotal` the bodies of one client
    /// address may hold at once (1: no share of its own).
    var requestSpoolPerClient = 0.1
    var responseSpoolMax = 1 << 30
    var spoolTotal = 8 << 30
    var spoolDirectory = "/tmp"
}

struct UpstreamConfig: Sendable {
    enum HostHeader: Sendable, Equatable {
        /// Send the upstream's own host:port (default).
        case upstream
        /// Keep the client's Host.
        case preserve
        /// Send this value.
        case fixed(String)
    }
    var name: String
    var host: String
    var port: UInt16
    /// Path the upstream URL carries ("" when none); prefixed to every forwarded path.
    var basePath: String
    var connectTimeout = 2.0
    var timeout = 30.0
    var hostHeader = HostHeader.upstream
    var maxIdleConnections = 64
    /// Open connections per process (shared out among workers), requests that may wait at
    /// that cap, and how long each may wait before a 503 (UpstreamConfig+Keys.swift).
    var maxConnections = 1024
    var maxPending = 1024
    var pendingTimeout = 5.0
    /// `url: https://…`: the `tls:` settings as written (defaults when there is no `tls:`).
    var tls: UpstreamTLSConfig?
    /// `sign`: requests to this upstream carry the gateway's HTTP Message Signature.
    var sign: MessageSigningConfig?
    /// `credentials`: what the gateway adds to every request it sends here.
    var credentials: UpstreamCredentialsConfig?
    /// Built from `tls` by the parser, once per config load (so a reload reads rotated
    /// files, and gets new pools).
    var tlsContext: UpstreamTLSContext?
    /// `protocol: h2c | h2`: HTTP/2 to the upstream (ConfigParser+Upstreams.swift).
    var http2 = false

    var endpoint: UpstreamEndpoint {
        var e = UpstreamEndpoint(
            host: host, port: port, connectTimeout: connectTimeout,
            responseTimeout: timeout, maxIdle: maxIdleConnections, tls: tlsContext)
        e.http2 = http2
        return e
    }
    /// The authority as an upstream Host header (the scheme's default port left out).
    var authority: String { port == (tls == nil ? 80 : 443) ? host : "\(host):\(port)" }
}

/// `upstreams.NAME.tls` of an `https://` upstream. Certificate chain and host-name
/// verification are on unless `insecureSkipVerify` is spelled out.
struct UpstreamTLSConfig: Sendable, Equatable {
    /// PEM CA certificates to trust instead of the system's.
    var caFile: String?
    /// SNI and the name the certificate must carry; default the URL's host. An IP address
    /// is checked against the certificate's IP SANs and never sent as SNI (RFC 6066 §3).
    var serverName: String
    /// The client certificate chain and its key (PEM) for upstreams that require mTLS.
    var certFile: String?
    var keyFile: String?
    /// `insecure_skip_verify: true`: no chain, date or name check at all (logged as a
    /// warning at start and on every reload).
    var insecureSkipVerify = false
}

/// `auth:` per route as written (docs/configuration.md); the parser turns it
/// into the route's `RouteAuth`.
enum AuthMode: String, Sendable, CaseIterable {
    case none, bearer, dpop, token, login, login_or_token, api_key
}

struct RouteConfig: Sendable {
    var index: Int
    /// For metrics and logs: `name:` or "routes[N]".
    var name: String
    var match: RouteMatch
    var upstream: String
    /// What the route's stages do to a request (its `auth:` mode, upgrades, preflights, what
    /// goes upstream, buffering, keyed stages' settings), grouped by stage: see
    /// RouteOptions.swift.
    var options = RouteOptions()
}

struct RouteMatch: Sendable, Equatable {
    var host: HostPattern?
    var path: PathPattern
    var methods: Set<HTTPMethod>?
}

/// Whether an upstream's interim responses (103 Early Hints, RFC 8297; 102) reach the client.
/// RFC 9110 §15.2 has a proxy forward them, but a front that predates 1xx support passes a
/// bare 103 to its client and loses the real answer (Debian's nginx 1.22 does), so `auto`
/// forwards them only to clients that are not behind a trusted proxy: the gateway then
/// talks to the browser itself. 100 Continue is not one of these: it answers the client's
/// own `Expect` (`limits.continue_timeout`).
enum EarlyHintsForwarding: String, Sendable, CaseIterable {
    case auto, always, never

    func forwards(behindTrustedProxy: Bool) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto: return !behindTrustedProxy
        }
    }
}
