import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// What one route needs on the request path, built once per config (apply time): the
/// route, its upstream pool and its metrics id. The router's index picks it. A class: the
/// request path hands it on by reference (as a struct, every hand-off copied the route).
final class RoutePlan {
    let route: RouteConfig
    let pool: UpstreamPool?
    let metricID: Int
    /// The route's upstream and its Host authority, looked up and formatted once per config.
    let upstream: UpstreamConfig?
    let upstreamAuthority: String

    /// What the request path reads of the route and its upstream on every request, taken
    /// out once (reading them through `route` and `upstream` copied those structs each time).
    let name: String
    let hostHeader: UpstreamConfig.HostHeader
    let basePath: String
    /// A token route's rules, made with the plan from the same config (a request keeps the
    /// plan it was routed by, even across a reload while its body arrives).
    let tokens: TokenRoutePlan?

    init(
        route: RouteConfig, pool: UpstreamPool?, metricID: Int, upstream: UpstreamConfig?,
        tokens: TokenRoutePlan? = nil
    ) {
        self.route = route
        self.pool = pool
        self.metricID = metricID
        self.upstream = upstream
        upstreamAuthority = upstream?.authority ?? ""
        name = route.name
        hostHeader = upstream?.hostHeader ?? .upstream
        basePath = upstream?.basePath ?? ""
        self.tokens = tokens
    }

    /// The path as it goes upstream: the upstream URL's path, then the request's (as the
    /// route forwards it, see `RouteOptions.forwardedPath`).
    func upstreamPath(_ path: String) -> String {
        let forwarded = route.options.forwardedPath(path)
        return basePath.isEmpty ? forwarded : basePath + forwarded
    }
}

/// One event loop thread: its HTTP server on the shared listen addresses (SO_REUSEPORT),
/// its upstream pools, router and metrics. Nothing here is shared with other workers; the
/// main thread talks to it only through `loop.execute`.
final class Worker: ResponderObserver {
    let id: Int
    let loop: EventLoop
    let metrics = WorkerMetrics()
    let log: Logger
    /// The wall clock every decision by time reads (tokens, proofs, sessions, caches); the
    /// monotonic `clock()` below only times requests.
    let wallClock: any WallClock
    private(set) var config: GatewayConfig
    private(set) var requestPolicy: RequestPipeline.Policy
    private(set) var pools: [String: UpstreamPool] = [:]
    /// TLS handshakes (all, resumed) of pools that a reload replaced, per upstream: the
    /// metric stays a counter across reloads.
    private var retiredTLSHandshakes: [String: UpstreamTLSHandshakes] = [:]
    private(set) var servers: [ExchangeServer] = []
    /// Where this worker's access log lines go (nil: `access_log: false` at start; the
    /// output is fixed at start, like the listeners).
    let accessLog: AccessLogWriter?
    private let ids: RequestIDGenerator
    /// Token routes: verified-token cache and this worker's copy of issuer keys.
    let tokens: AccessTokenValidator
    /// The `bearer` / `dpop` / `token` stage.
    let authenticator: TokenAuthenticator
    /// Browser logins and sessions.
    let login: LoginService
    /// Signed identity assertions (route option `identity_assertion`), cached per caller.
    let assertions = IdentityAssertions()
    /// Where `rd` may send a browser back to.
    private(set) var returnPolicy = ReturnTo()
    private(set) var draining = false
    /// Read of the config on every request, worked out once per config.
    private(set) var decisionEnabled = false
    private(set) var hasTrustedProxies = false
    private(set) var configGeneration = 0
    private var onDrained: (() -> Void)?
    private var thread: Thread?
    /// Open tunnels (WebSocket after a 101) and their watches: `Worker+Tunnels`.
    let tunnels = TunnelRegistry()
    /// Upstream 5xx answers and failures, for the status page (`Worker+Status`).
    let upstreamOutcomes = UpstreamOutcomes()
    /// The most the gateway reads of a body it must read itself (RFC 6750 form tokens, the
    /// logout form, back-channel logout tokens): such bodies are small, and an attacker's
    /// large one must not be buffered.
    static let ownBodyLimit = 64 << 10

    /// `stores` makes this worker's replay, session and introspection stores (the process's
    /// memory, or the worker's own Redis client).
    init(
        id: Int, config: GatewayConfig, log: Logger, processPrefix: String, stores: StoreBackend,
        wallClock: any WallClock = SystemClock(), router: Router? = nil, accessLogSink: LogSink? = nil
    ) {
        self.id = id
        self.wallClock = wallClock
        let loop = EventLoop()
        self.loop = loop
        tokens = AccessTokenValidator(
            loop: loop, wallClock: wallClock, sharedIntrospection: stores.sharedIntrospection(for: loop))
        authenticator = TokenAuthenticator(validator: tokens, replay: stores.replay(for: loop))
        login = LoginService(
            loop: loop, shared: stores.loginShared, log: log, tokens: tokens, wallClock: wallClock,
            makeStores: { stores.loginStores(for: loop, config: $0, settings: $1, wallClock: wallClock) })
        self.config = config
        // Replaced by `apply` below, with the route plans.
        requestPolicy = RequestPipeline.Policy(config, router: Router(routes: []), plans: [])
        self.log = log
        ids = RequestIDGenerator(worker: id, processPrefix: processPrefix)
        accessLog = config.accessLog.output.map {
            AccessLogWriter(sink: accessLogSink ?? .standardOutput, output: $0, loop: loop)
        }
        apply(config, router: router)
    }

    /// Adds a server on each listening socket (fds opened by the caller, one set per worker).
    /// `budget`: the process's `limits.max_connections`, shared by every worker's servers;
    /// `reclaimWarning`: the process's once-a-minute gate for the warning about reclaims.
    func serve(
        sockets: [(fd: Int32, tls: TLSContext?, http2: Bool)], budget: ConnectionBudget? = nil,
        reclaimWarning: ReclaimWarning = ReclaimWarning()
    ) throws {
        let options = serverOptions(config.limits)
        let budget = budget ?? ConnectionBudget(limit: options.maxConnections)
        for socket in sockets {
            let handler: (ServerExchange) -> Void = { [unowned self] exchange in self.handle(exchange) }
            let server = HTTP1Server(
                loop: loop, options: options, tls: socket.tls, http2: socket.http2, budget: budget, handler: handler)
            server.onReclaim = { [unowned self] in self.connectionReclaimed(reclaimWarning) }
            try server.serve(listeningSocket: socket.fd)
            servers.append(server)
        }
    }

    /// The loop's thread has ended (after `loop.stop()`, or when nothing was left to wait
    /// for): from then on its state may be read from another thread.
    var loopExited: Bool { thread?.isFinished ?? true }

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
        options.headerTimeout = limits.headerTimeout
        options.bodyTimeout = limits.bodyTimeout
        options.bodyPace = BodyPace(
            deadline: limits.bodyDeadline, minRate: limits.bodyMinRate, grace: limits.bodyMinRateGrace)
        // The process's cap: every worker's servers count against one `ConnectionBudget`.
        options.maxConnections = limits.maxConnections
        return options
    }

    /// Swaps in a new config for requests that start from now on (loop-thread). `router`:
    /// the config's routes compiled once for every worker (compiled here when nil).
    func apply(_ new: GatewayConfig, router: Router? = nil) {
        config = new
        decisionEnabled = new.decision.enabled
        hasTrustedProxies = !new.trustedProxies.isEmpty
        configGeneration += 1
        authenticator.apply(new)
        login.apply(new)
        assertions.apply(new)
        returnPolicy = ReturnTo(allowedHosts: new.login.allowedRedirectHosts, allowHTTP: !new.session.secureCookie)
        let options = serverOptions(new.limits)
        for s in servers { s.apply(options) }
        var next: [String: UpstreamPool] = [:]
        for (name, up) in new.upstreams {
            let endpoint = poolEndpoint(up, workers: new.workers)
            if let old = pools[name], old.endpoint == endpoint {
                next[name] = old
            } else {
                next[name] = UpstreamPool(loop: loop, endpoint: endpoint)
            }
        }
        for (name, old) in pools where next[name] !== old {
            old.closeIdle()
            if old.endpoint.tls != nil { retiredTLSHandshakes[name, default: .init()].add(old) }
        }
        pools = next
        upstreamOutcomes.setPools(next)
        // The parser numbers routes in file order (`RouteConfig.index`), checked below.
        let plans = new.routes.map {
            RoutePlan(
                route: $0, pool: next[$0.upstream], metricID: metrics.routeID($0.name),
                upstream: new.upstreams[$0.upstream], tokens: authenticator.plan(for: $0))
        }
        precondition(plans.indices.allSatisfy { plans[$0].route.index == $0 }, "route indices are 0..<count")
        requestPolicy = RequestPipeline.Policy(new, router: router ?? Router(routes: new.routes), plans: plans)
    }

    /// Stops accepting; calls `done` (on this loop) once no request is in flight.
    func drain(_ done: @escaping () -> Void) {
        draining = true
        for s in servers { s.stopAccepting() }
        onDrained = done
        endTunnels()
        drainProgress()
    }

    /// Finishes a drain once no request is in flight and no tunnel is open.
    func drainProgress() {
        guard metrics.inflight == 0, tunnels.entries.isEmpty, let done = onDrained else { return }
        onDrained = nil
        // Every request's line is made by now; none may stay in the buffer at exit.
        accessLog?.flush()
        done()
    }

    func clock() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    func snapshot() -> MetricsSnapshot {
        var s = metrics.snapshot(
            upstreamConnections: pools.mapValues { $0.openConnections },
            clientConnections: servers.reduce(0) { $0 + $1.openConnections },
            tokenCache: (tokens.cacheHits, tokens.cacheMisses))
        s.dpopUnchecked = authenticator.uncheckedProofs
        s.acceptPauses = servers.reduce(0) { $0 + $1.acceptPauses }
        s.connectionsReclaimed = servers.reduce(0) { $0 + $1.reclaimedConnections }
        s.upstreamTLSHandshakes = retiredTLSHandshakes
        for (name, pool) in pools where pool.endpoint.tls != nil {
            s.upstreamTLSHandshakes[name, default: .init()].add(pool)
        }
        s.tunnels = tunnelMetrics
        return s
    }

    // MARK: request path

    /// What the gateway keeps for this client connection (made on first use).
    func memo(_ connection: ClientConnection) -> ConnectionMemo {
        if let memo = connection.context.map({ unsafeDowncast($0, to: ConnectionMemo.self) }) { return memo }
        let memo = ConnectionMemo()
        connection.context = memo
        return memo
    }

    /// Whether the connection's peer is a trusted proxy, decided once per connection and
    /// config generation.
    private func peerTrusted(_ connection: ClientConnection) -> Bool {
        guard hasTrustedProxies else { return false }
        let memo = memo(connection)
        if memo.trustGeneration != configGeneration {
            memo.peerTrusted = config.trustedProxies.contains { $0.contains(connection.peer) }
            memo.trustGeneration = configGeneration
        }
        return memo.peerTrusted
    }

    func handle(_ ex: ServerExchange) {
        // In flight until its last byte is written (or its client is gone): a drain must not
        // stop the loop with a finished reply still in the socket buffer.
        metrics.inflight += 1
        ex.responder.observer = self
        let start = clock()
        let head = ex.head
        let fields = head.fields
        let trusted = peerTrusted(ex.connection)
        let host = fields.firstAndCount("Host")
        // A client's own X-Forwarded-* and X-Request-Id are read only if it is a trusted proxy.
        let ctx = RequestContext(
            forwarded: trusted
                ? ForwardedHeaders.compute(
                    .init(
                        peer: ex.connection.peer, peerTrusted: true, scheme: ex.connection.isTLS ? "https" : "http",
                        host: host.first, xForwardedFor: fields.values("X-Forwarded-For"),
                        xForwardedProto: fields.first("X-Forwarded-Proto"),
                        xForwardedHost: fields.first("X-Forwarded-Host"), xRequestID: fields.first("X-Request-Id")),
                    newRequestID: ids.next)
                : ForwardedHeaders.untrusted(
                    peer: ex.connection.peer, scheme: ex.connection.isTLS ? "https" : "http", host: host.first,
                    requestID: ids.next()),
            start: start, method: head.methodName, path: "", route: "-", routeID: -1)
        ctx.behindTrustedProxy = trusted
        // Decision mode (nginx auth_request, forward auth, Envoy ext_authz): see Worker+Decision.
        if decisionEnabled, let kind = decisionKind(head.target) {
            decide(ex, kind, forwarded: ctx.forwarded, trusted: trusted, ctx: ctx)
            return
        }
        switch RequestPipeline.prepare(head, peerTrusted: trusted, policy: requestPolicy, host: host)
        {
        case .reject(let status, let error, let description):
            ctx.path = String(head.target.prefix(256))
            answer(
                ex, ctx, ErrorResponse.make(status, error: error, description: description, requestID: ctx.requestID),
                close: status == 400)
        case .login(let endpoint, let path, let query):
            ctx.path = path
            handleLoginEndpoint(ex, endpoint, query: query, origin: origin(ctx.forwarded), ctx: ctx)
        case .protectedResourceMetadata(let document, let path):
            ctx.path = path
            ctx.route = ProtectedResourceDocument.logRoute
            answer(ex, ctx, document.response(to: head.method, requestID: ctx.requestID))
        case .forward(let plan, let path, let query, let build):
            ctx.path = path
            if UpgradeExchange.asksWebSocket(head) {
                ctx.route = plan.route.name
                ctx.routeID = plan.metricID
                if let refusal = upgradeRefusal(ex, route: plan.route, ctx: ctx) {
                    answer(ex, ctx, refusal, close: true)
                    return
                }
                ctx.upgrade = true
                upgradePending(ex)
            }
            guard let pool = plan.pool else {
                ctx.route = plan.route.name
                ctx.routeID = plan.metricID
                answer(
                    ex, ctx,
                    ErrorResponse.make(
                        502, error: "bad_gateway", description: "no upstream", requestID: ctx.requestID,
                        detail: "pool missing"))
                return
            }
            // A route that admits the request on its head alone (auth: none, a let-through
            // preflight) forwards it at once, without the callback a pending decision needs.
            if let admission = admitAtOnce(ex, head, plan: plan, path: path, query: query, ctx: ctx) {
                forward(ex, ctx: ctx, pool: pool, request: build.request(admission, ex: ex, ctx: ctx))
                return
            }
            admit(
                ex, head: head, plan: plan, path: path, query: query, forwarded: ctx.forwarded, ctx: ctx,
                triedAtOnce: true
            ) {
                [unowned self] ctx, admission in
                self.forward(ex, ctx: ctx, pool: pool, request: build.request(admission, ex: ex, ctx: ctx))
            }
        }
    }

    /// Reads a body the gateway must read itself (a form token, the logout form, a
    /// back-channel logout token), bounded by `ownBodyLimit`; a larger one gets 413 and is
    /// never buffered whole.
    func readOwnBody(_ ex: ServerExchange, _ ctx: RequestContext, then use: @escaping ([UInt8]) -> Void) {
        ex.body.collect(limit: Self.ownBodyLimit) { [unowned self] result in
            switch result {
            case .success(let bytes): use(bytes)
            case .failure(.tooLarge):
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        413, error: "invalid_request", description: "the request body is too large",
                        requestID: ctx.requestID), close: true)
            case .failure(let why):
                // Too slow (silence, the body's pace): RFC 9110 §15.5.9's 408.
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        why.isTimeout ? 408 : 400, error: "invalid_request",
                        description: why.isTimeout
                            ? "the request body took too long" : "the request body did not arrive",
                        requestID: ctx.requestID, detail: "body: \(why)"), close: true)
            }
        }
    }

    /// `bearer` / `dpop` / `token` routes (and `login_or_token` without a session cookie);
    /// `tokens`: the route's token settings; `form`: the tokens of a form body already read, and
    /// the body to forward in its place.
    func authenticateToken(
        _ ex: ServerExchange, head: HTTPRequestHead, ctx: RequestContext, plan: RoutePlan, tokens: TokenRouteConfig,
        target: TokenAuthenticator.Target,
        query: String?, form: (tokens: [String], kept: [UInt8])?, allowed: @escaping Admitted
    ) {
        let route = plan.route
        // Made with the plan from `route.auth.tokenRoute`, which `tokens` is.
        guard let rules = plan.tokens else { preconditionFailure("a token route's plan has its token rules") }
        authenticator.authenticate(
            head, tokens: tokens, plan: rules, target: target, query: query, formTokens: form?.tokens ?? []
        ) { [unowned self] decision in
            switch decision {
            case .allow(let caller):
                let token = caller.token
                ctx.subject = token.subject
                ctx.clientID = token.clientID
                ctx.issuer = token.issuer
                if ctx.upgrade && tokens.closeAtTokenExpiry { ctx.tunnelTokenExpiry = token.expiresAt }
                ctx.responseHeaders = caller.responseHeaders
                if tokens.dpop != nil { ctx.droppedResponseHeaders = ["DPoP-Nonce"] }
                var identity = self.identityHeaders(route, token.claims, ctx)
                if let jkt = caller.jkt, let name = tokens.dpop?.jktHeader { identity.append((name, jkt)) }
                self.rememberBearer(ex, head, caller: caller, plan: plan, ctx: ctx, identity: identity)
                if let a = self.tokenAssertion(route, token) { identity.append(a) }
                allowed(
                    ctx,
                    Admission(
                        identity: identity, session: false, body: form.map { BufferedRequestBody($0.kept) },
                        claims: token.claims))
            case .unavailable(let reason, let detail):
                ctx.rejection = .unavailable(reason)
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable",
                        description: "the gateway cannot verify tokens right now",
                        requestID: ctx.requestID, headers: [("Retry-After", "5")], detail: detail))
            case .deny(let denial):
                let failure = AuthFailure(denial)
                ctx.rejection = .refused(failure)
                self.metrics.authFailure(failure)
                self.answer(ex, ctx, ErrorResponse.auth(denial, requestID: ctx.requestID))
            }
        }
    }

    /// The upgrade request as it goes upstream, with a key of the gateway's own, kept on the
    /// context for the 101's check (`ProxyExchange.upstreamSwitchedProtocols`).
    private func upgradeRequest(_ request: consuming UpstreamCall.Request, _ ctx: RequestContext)
        -> UpstreamCall.Request
    {
        let key = WebSocketHandshake.freshKey()
        ctx.upstreamWebSocketKey = key
        return UpgradeExchange.upstreamRequest(request, key: key)
    }

    private func forward(
        _ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: consuming UpstreamCall.Request
    ) {
        if case .length(let n) = request.body?.framing, n > UInt64(config.limits.maxBodySize) {
            // Announced too large: refused before the upstream hears of it, nothing read.
            answer(
                ex, ctx,
                ErrorResponse.make(
                    413, error: "invalid_request", description: "the request body is too large",
                    requestID: ctx.requestID), close: true)
            return
        }
        guard ex.responder.isConnected else {
            // The client left while the gateway was deciding (keys, introspection, a session).
            answer(
                ex, ctx,
                ErrorResponse.make(
                    499, error: "client_gone", description: "the client closed the connection",
                    requestID: ctx.requestID))
            return
        }
        guard pool.hasRoom else {
            // At the upstream's connection cap: wait in its queue, or 503 past it.
            waitForUpstream(ex, ctx: ctx, pool: pool, request: request)
            return
        }
        startProxy(ex, ctx: ctx, pool: pool, request: request)
    }

    /// Proxies the request on a connection the pool has room for.
    func startProxy(_ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: UpstreamCall.Request) {
        ProxyExchange(worker: self, exchange: ex, context: ctx)
            .start(pool: pool, request: ctx.upgrade ? upgradeRequest(request, ctx) : request)
    }

    /// The public origin of this request, as far as it can be trusted (see RequestOrigin).
    func origin(_ forwarded: ForwardedHeaders) -> RequestOrigin.Origin? {
        RequestOrigin.select(
            publicURLs: config.publicURLs, scheme: forwarded.forwardedProto, host: forwarded.forwardedHost ?? "",
            fromTrustedProxy: forwarded.originFromTrustedProxy)
    }

    /// The one door for every answer the gateway writes itself: the response (through the
    /// exchange's responder, which answers exactly once and sends nothing to a client that
    /// is gone), then the access log line and the metrics. Streamed proxy answers end in
    /// `requestFinished` (see `ProxyExchange`).
    func answer(
        _ ex: ServerExchange, _ ctx: RequestContext, _ response: GatewayResponse, upstreamSeconds: Double = 0,
        close: Bool = false
    ) {
        // A page with a problem (a login step that is unavailable) is JSON for a non-browser.
        let shaped =
            response.page != nil && response.problem != nil && !Pages.wantsHTML(ex.head)
            ? response.jsonForm(requestID: ctx.requestID) : response
        let response = config.pages.finish(shaped, requestID: ctx.requestID)
        let gone = !ex.responder.isConnected
        // Logged first: by the time a client holds the answer, its log line exists.
        // 499: client closed the request (nginx's convention, for logs and metrics only).
        requestFinished(
            ctx, status: gone ? 499 : response.status, bytes: gone ? 0 : response.body.utf8.count,
            upstreamSeconds: upstreamSeconds,
            detail: gone ? "client gone: " + (response.detail ?? "") : response.detail,
            reason: response.reason)
        response.send(ex.responder, requestID: ctx.requestID, close: close || draining)
    }

    /// The route's identity headers for these claims. A claim whose value cannot be a header
    /// value (a control byte: RFC 9110 §5.5) gives no header, and the log says which one —
    /// never the value, which is the caller's.
    func identityHeaders(_ route: RouteConfig, _ claims: JSONObject, _ ctx: RequestContext) -> [(String, String)] {
        route.identityHeaders.values(for: claims) { header in
            self.log.warning(
                "identity header omitted",
                metadata: [
                    "request_id": .string(ctx.requestID), "route": .string(ctx.route), "header": .string(header),
                    "reason": "the claim's value has a character a header value may not hold (RFC 9110 §5.5)"
                ])
        }
    }

    /// The request's answer is written out or its client is gone: it is no longer in flight.
    func responderCompleted(_ responder: Responder, flushed: Bool) {
        metrics.inflight -= 1
        if draining { drainProgress() }
    }

    /// `reason`: a stable code for why the gateway answered as it did (else the rejection's).
    func requestFinished(
        _ ctx: RequestContext, status: Int, bytes: Int, upstreamSeconds: Double, detail: String?, reason: String? = nil
    ) {
        let seconds = clock() - ctx.start
        metrics.record(routeID: ctx.routeID, status: status, seconds: seconds)
        if let accessLog {
            accessLog.record(
                AccessLogRecord(
                    requestID: ctx.requestID, method: ctx.method, path: ctx.path, route: ctx.route, status: status,
                    bytes: bytes, durationMicros: Int((seconds * 1e6).rounded()),
                    upstreamMicros: Int((upstreamSeconds * 1e6).rounded()), sub: ctx.subject,
                    clientID: ctx.clientID, issuer: ctx.issuer, rejection: ctx.rejection?.code,
                    reason: reason ?? ctx.rejection?.reason?.code, detail: detail))
        }
    }
}
