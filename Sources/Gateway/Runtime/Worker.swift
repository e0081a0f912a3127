import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// One event loop thread: its HTTP servers on the shared listen addresses (SO_REUSEPORT) and
/// its upstream pools. It owns the loop; the request path is its services' and its route
/// plans' stages (`Worker+Handle`, `Pipeline/`). Nothing here is shared with other workers;
/// the main thread talks to it only through `loop.execute`.
final class Worker: ResponderObserver {
    let id: Int
    let loop: EventLoop
    /// What the stages work with: config, clocks, metrics, log, budgets, shared services.
    let services: WorkerServices
    private(set) var pools: [String: UpstreamPool] = [:]
    /// TLS handshakes (all, resumed) of pools that a reload replaced, per upstream: the
    /// metric stays a counter across reloads.
    private(set) var retiredTLSHandshakes: [String: UpstreamTLSHandshakes] = [:]
    private(set) var servers: [ExchangeServer] = []
    private var onDrained: (() -> Void)?
    private var thread: Thread?

    var config: GatewayConfig { services.config }
    var metrics: WorkerMetrics { services.metrics }
    var log: Logger { services.log }
    var tokens: AccessTokenValidator { services.authentication.tokens }
    var login: LoginService { services.authentication.login }

    /// `stores` makes this worker's replay, session and introspection stores (the process's
    /// memory, or the worker's own Redis client); `spool`: the process's disk budgets.
    init(
        id: Int, config: GatewayConfig, log: Logger, processPrefix: String, stores: StoreBackend,
        wallClock: any WallClock = SystemClock(), router: Router? = nil, routes: [SharedRoute]? = nil,
        accessLogSink: LogSink? = nil,
        spanExporter: SpanExporter? = nil, spool: SpoolBudgets = SpoolBudgets()
    ) {
        self.id = id
        let loop = EventLoop()
        self.loop = loop
        services = WorkerServices(
            id: id, loop: loop, config: config, log: log, processPrefix: processPrefix, stores: stores,
            wallClock: wallClock, accessLogSink: accessLogSink, spanExporter: spanExporter, spool: spool)
        apply(config, router: router, routes: routes)
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
            let server = HTTPServer(
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
    /// the config's routes compiled once for every worker, and `routes` their configs as every
    /// worker's plans share them (each made here when nil).
    func apply(_ new: GatewayConfig, router: Router? = nil, routes: [SharedRoute]? = nil) {
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
        services.proxying.upstreamOutcomes.setPools(next)
        // The plans' stages read the config they are made for (a rate limit's issuers, an MCP
        // route's origins): the services take it first. The token rules are the new config's
        // too: the authenticator takes it before the plans are made from it.
        services.prepare(new)
        services.authentication.authenticator.apply(new)
        // The parser numbers routes in file order (`RouteConfig.index`), checked below. The
        // plans that name one upstream share its config.
        let upstreams = new.upstreams.mapValues(SharedUpstream.init)
        let sharing = StageSharing()
        let plans = (routes ?? new.routes.map(SharedRoute.init)).map { shared in
            let route = shared.config
            return RoutePlan(
                route: shared, pool: next[route.upstream], metricID: metrics.routeID(route.name),
                upstream: upstreams[route.upstream], tokens: services.authentication.authenticator.plan(for: route),
                services: services, sharing: sharing)
        }
        precondition(plans.indices.allSatisfy { plans[$0].route.index == $0 }, "route indices are 0..<count")
        services.apply(
            new,
            policy: RouteResolver.Policy(
                new, router: router ?? Router(routes: new.routes), plans: plans,
                ownRoutes: OwnRoutes(new, services: services)))
    }

    /// This worker's pool settings for `up`: its share of the process's `max_connections`
    /// and `max_pending`, split evenly among workers (rounded up, at least one), as
    /// `limits.max_tunnels` is.
    func poolEndpoint(_ up: UpstreamConfig, workers: Int) -> UpstreamEndpoint {
        var endpoint = up.endpoint
        let n = max(1, workers)
        endpoint.maxConnections = max(1, (up.maxConnections + n - 1) / n)
        endpoint.maxPending = (up.maxPending + n - 1) / n
        endpoint.pendingTimeout = up.pendingTimeout
        return endpoint
    }

    /// Stops accepting; calls `done` (on this loop) once no request is in flight.
    func drain(_ done: @escaping () -> Void) {
        services.drain { [unowned self] in self.drainProgress() }
        for s in servers { s.stopAccepting() }
        onDrained = done
        services.proxying.tunnels.endAll()
        drainProgress()
    }

    /// Finishes a drain once no request is in flight and no tunnel is open.
    private func drainProgress() {
        guard metrics.inflight == 0, services.proxying.tunnels.entries.isEmpty, let done = onDrained else { return }
        onDrained = nil
        // Every request's line is made by now; none may stay in the buffer at exit.
        services.accessLog?.flush()
        done()
    }

    /// The request's answer is written out or its client is gone: it is no longer in flight.
    func completed(_ responder: Responder, flushed: Bool) {
        metrics.inflight -= 1
        services.requestOrTunnelEnded()
    }

    /// An idle client connection was closed for a new one at `limits.max_connections`: said
    /// in the log once a minute for the process, as nginx warns "worker_connections are not
    /// enough, reusing connections".
    private func connectionReclaimed(_ warning: ReclaimWarning) {
        guard warning.due(now: Int(services.clock())) else { return }
        log.warning(
            "limits.max_connections reached: closing the oldest idle client connections for new ones (logged once a minute; tokengate_connections_reclaimed_total counts them)",
            metadata: ["max_connections": .stringConvertible(config.limits.maxConnections)])
    }
}
