import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// One event loop thread: its HTTP server on the shared listen addresses (SO_REUSEPORT),
/// its upstream pools, router and metrics. Nothing here is shared with other workers; the
/// main thread talks to it only through `loop.execute`.
final class Worker: ResponderObserver {
    let id: Int
    let loop: EventLoop
    let metrics = WorkerMetrics()
    /// The process's disk for spooled answers (set before the worker serves); nil: none.
    var spoolBudget: SpoolBudget?
    /// Request buffering's disk budget (`limits.request_spool_total`), shared by workers.
    var requestSpoolBudget: SpoolBudget?
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
    /// This worker's spans (nil: `tracing` is off; fixed at start, like the access log).
    let tracer: Tracer?
    let ids: RequestIDGenerator
    /// The last Host value normalized here (RequestPipeline.prepare).
    let hosts = HostMemo()
    /// Token routes: verified-token cache and this worker's copy of issuer keys.
    let tokens: AccessTokenValidator
    /// The `bearer` / `dpop` / `token` stage.
    let authenticator: TokenAuthenticator
    /// Routes with `token_exchange`: the caller's token traded for the upstream's (RFC 8693).
    let exchanger: TokenExchanger
    /// Browser logins and sessions.
    let login: LoginService
    /// Signed identity assertions (route option `identity_assertion`), cached per caller.
    let assertions = IdentityAssertions()
    /// The newest DPoP nonce of each upstream the gateway sends DPoP-bound tokens to.
    let upstreamNonces = UpstreamNonces()
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
        wallClock: any WallClock = SystemClock(), router: Router? = nil, accessLogSink: LogSink? = nil,
        spanExporter: SpanExporter? = nil
    ) {
        self.id = id
        self.wallClock = wallClock
        let loop = EventLoop()
        self.loop = loop
        tokens = AccessTokenValidator(
            loop: loop, wallClock: wallClock, sharedIntrospection: stores.sharedAnswers(.introspection, for: loop))
        authenticator = TokenAuthenticator(validator: tokens, replay: stores.replay(for: loop))
        exchanger = TokenExchanger(loop: loop, wallClock: wallClock, shared: stores.sharedAnswers(.exchange, for: loop))
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
        tracer = spanExporter.map { Tracer(config: $0.config, exporter: $0, loop: loop) }
        loop.callObserver = tracer
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
        exchanger.apply(new)
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
}
