import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// One event loop thread: its HTTP server on the shared listen addresses (SO_REUSEPORT),
/// its upstream pools, router and metrics. Nothing here is shared with other workers; the
/// main thread talks to it only through `loop.execute`.
final class Worker: FlushListener {
    let id: Int
    let loop: EventLoop
    let metrics = WorkerMetrics()
    let log: Logger
    private(set) var config: GatewayConfig
    private(set) var router: Router
    private var routesByIndex: [Int: RouteConfig] = [:]
    private(set) var pools: [String: UpstreamPool] = [:]
    private var servers: [HTTPServer] = []
    private let ids: RequestIDGenerator
    let connections = ClientConnections()
    /// Token routes: verified-token cache and this worker's copy of issuer keys.
    let tokens: AccessTokenValidator
    /// The `bearer` / `dpop` / `token` stage.
    let authenticator: TokenAuthenticator
    /// Browser logins and sessions.
    let login: LoginService
    /// Where `rd` may send a browser back to.
    private(set) var returnPolicy = ReturnTo()
    private(set) var draining = false
    private var configGeneration = 0
    /// Route index → the metrics' interned id of its name (names survive reloads).
    private var routeMetricIDs: [Int: Int] = [:]
    private var onDrained: (() -> Void)?
    private var thread: Thread?

    /// `replay(loop)` makes this worker's DPoP replay store (shared memory, or its own Redis client).
    init(id: Int, config: GatewayConfig, log: Logger, processPrefix: String, replay: (EventLoop) -> ReplayStore,
         loginShared: LoginShared = LoginShared(), loginStores: @escaping (EventLoop, GatewayConfig, LoginSettings) -> LoginStores,
         sharedIntrospection: (EventLoop) -> SharedIntrospectionCache? = { _ in nil }) {
        self.id = id
        let loop = EventLoop()
        self.loop = loop
        tokens = AccessTokenValidator(loop: loop, sharedIntrospection: sharedIntrospection(loop))
        authenticator = TokenAuthenticator(validator: tokens, replay: replay(loop))
        login = LoginService(loop: loop, shared: loginShared, log: log, tokens: tokens,
                             makeStores: { loginStores(loop, $0, $1) })
        self.config = config
        self.log = log
        router = Router(routes: config.routes)
        ids = RequestIDGenerator(worker: id, processPrefix: processPrefix)
        apply(config)
    }

    /// Adds a server on each listening socket (fds opened by the caller, one set per worker).
    func serve(sockets: [(fd: Int32, tls: TLSContext?)]) throws {
        let options = serverOptions(config.limits)
        for socket in sockets {
            let server = HTTPServer(loop: loop, options: options, tls: socket.tls) { [unowned self] req in
                self.handle(req)
            }
            try server.serve(listeningSocket: socket.fd)
            servers.append(server)
        }
    }

    func startThread() {
        let t = Thread { [loop] in loop.run() }
        t.name = "tokengate-worker-\(id)"
        thread = t
        t.start()
    }

    private func serverOptions(_ limits: Limits) -> HTTPServerOptions {
        var options = HTTPServerOptions()
        options.maxBodySize = limits.maxBodySize
        options.maxHeaderSize = limits.maxHeaderSize
        options.idleTimeout = limits.clientIdleTimeout
        return options
    }

    /// Swaps in a new config for requests that start from now on (loop-thread).
    func apply(_ new: GatewayConfig) {
        config = new
        configGeneration += 1
        authenticator.apply(new)
        login.apply(new)
        returnPolicy = ReturnTo(allowedHosts: new.login.allowedRedirectHosts, allowHTTP: !new.session.secureCookie)
        for r in new.routes { routeMetricIDs[r.index] = metrics.routeID(r.name) }
        let options = serverOptions(new.limits)
        for s in servers { s.apply(options) }
        router = Router(routes: new.routes)
        routesByIndex = Dictionary(uniqueKeysWithValues: new.routes.map { ($0.index, $0) })
        var next: [String: UpstreamPool] = [:]
        for (name, up) in new.upstreams {
            if let old = pools[name], old.endpoint == up.endpoint { next[name] = old }
            else { next[name] = UpstreamPool(loop: loop, endpoint: up.endpoint) }
        }
        for (name, old) in pools where next[name] !== old { old.closeIdle() }
        pools = next
    }

    /// Stops accepting; calls `done` (on this loop) once no request is in flight.
    func drain(_ done: @escaping () -> Void) {
        draining = true
        for s in servers { s.stopAccepting() }
        onDrained = done
        if metrics.inflight == 0 { finishDrain() }
    }

    private func finishDrain() {
        guard let done = onDrained else { return }
        onDrained = nil
        done()
    }

    func clock() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    func snapshot() -> MetricsSnapshot {
        var s = metrics.snapshot(upstreamConnections: pools.mapValues { $0.openConnections }, clientConnections: connections.count,
                                 tokenCache: (tokens.cacheHits, tokens.cacheMisses))
        s.dpopUnchecked = authenticator.uncheckedProofs
        return s
    }

    // MARK: request path

    private func handle(_ req: ServerRequest) {
        // In flight until its last byte is written (or its client is gone): a drain must not
        // stop the loop with a finished reply still in the socket buffer.
        metrics.inflight += 1
        req.onFlushed(self)
        let watch = connections.watch(req) { [unowned self] unflushed in self.connectionGone(unflushed: unflushed) }
        watch?.unflushed += 1
        var ctx = RequestContext(requestID: "", start: clock(), method: req.method?.rawValue ?? "?", path: "", route: "-", routeID: -1)
        let headers = req.headers
        let peer = watch?.peer ?? req.peerAddress
        var trusted = false
        if !config.trustedProxies.isEmpty {
            if let watch, watch.trustGeneration == configGeneration {
                trusted = watch.trusted
            } else {
                trusted = isTrusted(peer)
                watch?.trusted = trusted
                watch?.trustGeneration = configGeneration
            }
        }
        // A client's own X-Forwarded-* and X-Request-Id are read only if it is a trusted proxy.
        let forwarded = ForwardedHeaders.compute(
            .init(peer: peer, peerTrusted: trusted, scheme: req.isTLS ? "https" : "http",
                  host: headers.first("Host"),
                  xForwardedFor: trusted ? headers.values("X-Forwarded-For") : [],
                  xForwardedProto: trusted ? headers.first("X-Forwarded-Proto") : nil,
                  xForwardedHost: trusted ? headers.first("X-Forwarded-Host") : nil,
                  xRequestID: trusted ? headers.first("X-Request-Id") : nil),
            newRequestID: ids.next)
        ctx.requestID = forwarded.requestID
        switch RequestPipeline.prepare(req, forwarded: forwarded, peerTrusted: trusted, router: router, routes: routesByIndex,
                                       config: config) {
        case .reject(let status, let error, let description):
            ctx.path = String(req.rawTarget.prefix(256))
            ErrorResponse.send(req, status: status, error: error, description: description,
                               requestID: ctx.requestID, close: draining || status == 400)
            requestFinished(ctx, status: status, bytes: 0, upstreamSeconds: 0, detail: description)
        case .login(let endpoint, let path, let query):
            ctx.path = path
            handleLoginEndpoint(req, endpoint, query: query, origin: origin(forwarded), ctx: ctx)
        case .forward(let route, let path, let query, let build):
            ctx.path = path
            ctx.route = route.name
            ctx.routeID = routeMetricIDs[route.index] ?? -1
            guard let pool = pools[route.upstream] else {
                ErrorResponse.send(req, status: 502, error: "bad_gateway", description: "no upstream", requestID: ctx.requestID)
                requestFinished(ctx, status: 502, bytes: 0, upstreamSeconds: 0, detail: "pool missing")
                return
            }
            // A login route, or a login_or_token route whose request carries a session cookie.
            if route.client != nil && (route.tokens == nil || Cookies(req.headers).values[login.settings.sessionCookie] != nil) {
                authenticateSession(req, route: route, path: path, query: query, origin: origin(forwarded), ctx: ctx) { [unowned self] ctx, identity in
                    self.forward(req, ctx: ctx, pool: pool, request: build(identity, true), watch: watch)
                }
                return
            }
            guard route.tokens != nil else {
                forward(req, ctx: ctx, pool: pool, request: build([], false), watch: watch)
                return
            }
            let target = TokenAuthenticator.Target(scheme: forwarded.forwardedProto, host: forwarded.forwardedHost ?? "",
                                                   fromTrustedProxy: forwarded.originFromTrustedProxy, path: path)
            authenticator.authenticate(req, route: route, target: target, query: query) { [unowned self] decision in
                var ctx = ctx
                switch decision {
                case .allow(let caller):
                    let token = caller.token
                    ctx.subject = token.subject
                    ctx.clientID = token.clientID
                    ctx.issuer = token.issuer
                    guard req.isConnected else {
                        // The client left while its keys were being fetched.
                        req.respond(status: 499, body: nil)
                        self.requestFinished(ctx, status: 499, bytes: 0, upstreamSeconds: 0, detail: "client gone")
                        return
                    }
                    ctx.responseHeaders = caller.responseHeaders
                    if route.tokens?.dpop != nil { ctx.droppedResponseHeaders = ["DPoP-Nonce"] }
                    var identity = self.identityHeaders(route, token.claims, ctx)
                    if let jkt = caller.jkt, let name = route.tokens?.dpop?.jktHeader { identity.append((name, jkt)) }
                    self.forward(req, ctx: ctx, pool: pool, request: build(identity, false), watch: watch)
                case .unavailable(let detail):
                    req.responseHeaders.add("Retry-After", "5")
                    ErrorResponse.send(req, status: 503, error: "temporarily_unavailable",
                                       description: "the gateway cannot verify tokens right now", requestID: ctx.requestID, close: self.draining)
                    self.requestFinished(ctx, status: 503, bytes: 0, upstreamSeconds: 0, detail: detail)
                case .deny(let denial):
                    ctx.rejection = denial.primary?.error?.rawValue ?? "no_credentials"
                    self.metrics.authFailure(ctx.rejection!)
                    ErrorResponse.sendAuthError(req, denial: denial, requestID: ctx.requestID, close: self.draining)
                    self.requestFinished(ctx, status: denial.status, bytes: 0, upstreamSeconds: 0, detail: denial.detail)
                }
            }
        }
    }

    private func forward(_ req: ServerRequest, ctx: RequestContext, pool: UpstreamPool, request: UpstreamCall.Request,
                         watch: ClientConnections.Watch?) {
        let exchange = ProxyExchange(worker: self, client: req, context: ctx)
        watch?.exchange = exchange
        exchange.start(pool: pool, request: request)
    }

    /// The public origin of this request, as far as it can be trusted (see RequestOrigin).
    private func origin(_ forwarded: ForwardedHeaders) -> RequestOrigin.Origin? {
        RequestOrigin.select(publicURLs: config.publicURLs, scheme: forwarded.forwardedProto, host: forwarded.forwardedHost ?? "",
                             fromTrustedProxy: forwarded.originFromTrustedProxy)
    }

    private func isTrusted(_ peer: String) -> Bool {
        config.trustedProxies.contains { $0.contains(peer) }
    }

    func requestFlushed(on connection: ClientConnectionID?) {
        connections.flushed(connection)
        metrics.inflight -= 1
        if draining && metrics.inflight == 0 { finishDrain() }
    }

    /// A client connection went away with `unflushed` replies that will now never flush.
    func connectionGone(unflushed: Int) {
        metrics.inflight -= unflushed
        if draining && metrics.inflight == 0 { finishDrain() }
    }

    /// The route's identity headers for these claims. A claim whose value cannot be a header
    /// value (a control byte: RFC 9110 §5.5) gives no header, and the log says which one —
    /// never the value, which is the caller's.
    func identityHeaders(_ route: RouteConfig, _ claims: JSONObject, _ ctx: RequestContext) -> [(String, String)] {
        route.identityHeaders.values(for: claims) { header in
            self.log.warning("identity header omitted", metadata: [
                "request_id": .string(ctx.requestID), "route": .string(ctx.route), "header": .string(header),
                "reason": "the claim's value has a character a header value may not hold (RFC 9110 §5.5)",
            ])
        }
    }

    func requestFinished(_ ctx: RequestContext, status: Int, bytes: Int, upstreamSeconds: Double, detail: String?) {
        let seconds = clock() - ctx.start
        metrics.record(routeID: ctx.routeID, status: status, seconds: seconds)
        if config.accessLog {
            var meta: Logger.Metadata = [
                "request_id": .string(ctx.requestID), "route": .string(ctx.route), "method": .string(ctx.method),
                "path": .string(ctx.path), "status": .stringConvertible(status), "bytes": .stringConvertible(bytes),
                "duration_ms": .stringConvertible((seconds * 1e6).rounded() / 1e3),
                "upstream_ms": .stringConvertible((upstreamSeconds * 1e6).rounded() / 1e3),
            ]
            if let detail { meta["detail"] = .string(detail) }
            if let v = ctx.subject { meta["sub"] = .string(v) }
            if let v = ctx.clientID { meta["client_id"] = .string(v) }
            if let v = ctx.issuer { meta["issuer"] = .string(v) }
            if let v = ctx.rejection { meta["rejection"] = .string(v) }
            log.info("access", metadata: meta)
        }
    }
}
