import OAuth
import Reactor

/// The whole configuration, validated: every value here has passed `ConfigParser`.
/// Plain values; a reload builds a new one and swaps it in.
public struct GatewayConfig: Sendable {
    public var listeners: [ListenerConfig] = []
    /// `/healthz`, `/readyz`, `/metrics`; never served on the public listeners.
    public var adminListen: SocketAddress? = SocketAddress(host: "127.0.0.1", port: 9901)
    public var workers: Int = 1
    public var trustedProxies: [CIDR] = []
    public var limits = Limits()
    public var accessLog = true
    public var logLevel = "info"
    /// Where shared state lives (DPoP jti replay entries): this process, or Redis.
    public var store = StoreConfig.memory
    /// How clients address the gateway (`public_url`: one origin or several): what a DPoP
    /// proof's `htu` must name. Empty: a trusted proxy's X-Forwarded-Proto/-Host say it —
    /// never a client's own Host header.
    public var publicURLs: [PublicURL] = []
    public var dpop = DPoPSettings()
    public var session = SessionConfig() {
        didSet { updateOwnCookies() }
    }
    /// The cookie names the gateway sets (sessions, login state), with their chunk names:
    /// removed from requests before they go upstream. Empty when no route logs browsers in.
    public private(set) var ownCookieNames: Set<String> = []

    mutating func updateOwnCookies() {
        // Always: a reload that removes the last login route must not start passing session
        // cookies (Redis session ids included) to upstreams.
        var names: Set<String> = []
        for base in [session.cookieName, "tokengate_login"] {
            for prefix in ["", "__Host-"] {
                names.insert(prefix + base)
                for i in 1..<4 { names.insert("\(prefix)\(base)_\(i)") }
            }
        }
        ownCookieNames = names
    }
    public var login = LoginConfig()
    /// Prefix of headers reserved for the gateway's identity headers: client-sent ones are
    /// always removed (DESIGN: strip, then inject).
    public var reservedHeaderPrefix: String? = nil {
        didSet { reservedHeaderPrefixBytes = reservedHeaderPrefix.map { Array($0.lowercased().utf8) } }
    }
    /// The prefix lowercased, as the header rules compare it.
    public private(set) var reservedHeaderPrefixBytes: [UInt8]? = nil
    /// `trusted_proxy_headers`: more names (lowercased) that, like the built-in override
    /// headers (`HeaderRules.trustedOnly`), only a trusted proxy may send. Additions only:
    /// the built-in list cannot be shortened.
    public var trustedProxyHeaders: [[UInt8]] = []
    public var upstreams: [String: UpstreamConfig] = [:]
    public var routes: [RouteConfig] = [] {
        didSet { updateOwnCookies() }
    }
    public var issuers: [String: IssuerConfig] = [:]
    /// Per-worker cache of verified tokens; 0 entries disables it.
    public var tokenCacheEntries = 10_000
    public var tokenCacheTTL = 120.0
    public var issuerNames: [String] { issuers.keys.sorted() }
    public var clients: [String: ClientConfig] = [:]
    public var clientNames: [String] { clients.keys.sorted() }
    /// Identity header names stripped from every client request on every route (all that
    /// any route maps, plus the defaults), lowercased.
    public var strippedIdentityHeaders: [[UInt8]] = []

    public init() {}
}

/// `store:` — `memory`, or a Redis server (`redis://[[user]:password@]host[:port][/db]`)
/// whose keys all start with `prefix`.
public enum StoreConfig: Sendable, Equatable {
    case memory
    case redis(url: String, prefix: String)
}

/// The external origin of the gateway: `https://api.example.com[:port]`.
public struct PublicURL: Sendable, Equatable {
    public var scheme: String
    public var authority: String
}

public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct ListenerConfig: Sendable {
    public var address: SocketAddress
    public var tls: TLSFiles?
}

public struct TLSFiles: Sendable, Equatable {
    public var certFile: String
    public var keyFile: String
}

public struct Limits: Sendable {
    public var maxBodySize = 4 << 20
    public var maxHeaderSize = 32 << 10
    public var clientIdleTimeout = 60.0
    public var shutdownGrace = 30.0
    /// Client connections per process; past it the listeners stop accepting until one closes.
    public var maxConnections = 10_000
    /// A client that has not sent a whole request head by then gets 408 and is closed
    /// (slowloris).
    public var headerTimeout = 10.0
    /// No request body byte for this long: the exchange fails and the connection closes.
    public var bodyTimeout = 30.0
    /// A tunnel (WebSocket) with no byte either way for this long is closed.
    public var tunnelIdleTimeout = 300.0
    /// Tunnels per process (shared evenly among workers); an upgrade past it gets 503.
    public var maxTunnels = 10_000
}

public struct UpstreamConfig: Sendable {
    public enum HostHeader: Sendable, Equatable {
        /// Send the upstream's own host:port (default).
        case upstream
        /// Keep the client's Host.
        case preserve
        /// Send this value.
        case fixed(String)
    }
    public var name: String
    public var host: String
    public var port: UInt16
    /// Path the upstream URL carries ("" when none); prefixed to every forwarded path.
    public var basePath: String
    public var connectTimeout = 2.0
    public var timeout = 30.0
    public var hostHeader = HostHeader.upstream
    public var maxIdleConnections = 64

    var endpoint: UpstreamEndpoint {
        UpstreamEndpoint(host: host, port: port, connectTimeout: connectTimeout,
                         responseTimeout: timeout, maxIdle: maxIdleConnections)
    }
    /// The authority as an upstream Host header.
    var authority: String { port == 80 ? host : "\(host):\(port)" }
}

/// `auth:` per route (DESIGN "What it does, per route").
public enum AuthMode: String, Sendable, CaseIterable {
    case none, bearer, dpop, token, login, login_or_token
}

public struct RouteConfig: Sendable {
    public var index: Int
    /// For metrics and logs: `name:` or "routes[N]".
    public var name: String
    public var match: RouteMatch
    public var upstream: String
    public var auth: AuthMode
    /// Set when `auth` is bearer, dpop or token.
    public var tokens: TokenRouteConfig?
    /// Claims → headers for authenticated requests (default: oauth2-proxy's names).
    public var identityHeaders = IdentityHeaders.standard
    /// `client:` of a `login` / `login_or_token` route: the client that logs browsers in.
    public var client: String?
    /// The session's access token goes upstream as `Authorization: Bearer` (login routes).
    public var forwardSessionToken = false
    /// Scopes and claims a session must have (`require:` of login / login_or_token routes),
    /// checked against the session's claims and the scope the token response granted.
    public var sessionRequirement: AuthorizationRequirement?
    /// `upgrades:` the protocols a client may switch to (RFC 9110 §7.8); only `websocket`
    /// exists. Empty: an upgrade request is refused.
    public var upgrades: Set<String> = ["websocket"]
}

public struct RouteMatch: Sendable, Equatable {
    public var host: HostPattern?
    public var path: PathPattern
    public var methods: Set<HTTPMethod>?
}
