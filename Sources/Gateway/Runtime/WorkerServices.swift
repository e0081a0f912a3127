import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// A worker's core: its loop, clocks, metrics, log, the config in force and the one door for
/// answers, with the services every request shares in three groups (authentication,
/// proxying, the modules'). One per worker, made with it; the worker swaps the config in on
/// `apply`. A stage is made from it with the services it uses and reads the core through its
/// request (`RoutedRequest.services`); proxied exchanges hold it. Never the worker: the
/// worker owns the loop and its servers, the stages own the request path. Loop-thread only.
final class WorkerServices {
    let loop: EventLoop
    let log: Logger
    let metrics: WorkerMetrics
    /// The wall clock every decision by time reads (tokens, proofs, sessions, caches); the
    /// monotonic `clock()` below only times requests.
    let wallClock: any WallClock
    /// The config in force and what the request path reads of it, swapped by `apply`.
    private(set) var current: AppliedConfig
    /// Where this worker's access log lines go (nil: `access_log: false` at start; the
    /// output is fixed at start, like the listeners).
    let accessLog: AccessLogWriter?
    /// This worker's spans (nil: `tracing` is off; fixed at start, like the access log).
    let tracer: Tracer?
    let ids: RequestIDGenerator
    /// How a caller is known: token checks, proofs' replay memory, logins and sessions.
    let authentication: Authentication
    /// What proxied requests share: spool budgets, upstream nonces and outcomes, tunnels.
    let proxying: Proxying
    /// The modules' services on this worker (`GatewayModule`), for the catalog the config was
    /// read with (fixed at start).
    let modules: ModuleServices
    /// Set by `drain`: answers close their connection, and the worker is told when the last
    /// request or tunnel ends.
    private var drainState = Drain()

    var config: GatewayConfig { _read { yield current.config } }
    /// What of the config the request path reads on every request, with the route plans.
    var requestPolicy: RouteResolver.Policy { _read { yield current.requestPolicy } }
    var draining: Bool { drainState.draining }

    /// The most the gateway reads of a body it must read itself (RFC 6750 form tokens, the
    /// logout form, back-channel logout tokens): such bodies are small, and an attacker's
    /// large one must not be buffered.
    static let ownBodyLimit = 64 << 10
    /// Seconds a client is told to wait before trying again when an upstream is full.
    static let upstreamRetryAfter = "1"

    /// `spool`: the process's disk budgets for spooled answers and request bodies, shared by
    /// every worker (nil: none).
    init(
        id: Int, loop: EventLoop, config: GatewayConfig, log: Logger, processPrefix: String, stores: StoreBackend,
        wallClock: any WallClock, accessLogSink: LogSink?, spanExporter: SpanExporter?,
        spool: SpoolBudgets = SpoolBudgets()
    ) {
        self.loop = loop
        self.log = log
        self.wallClock = wallClock
        metrics = WorkerMetrics()
        let tokens = AccessTokenValidator(
            loop: loop, wallClock: wallClock, sharedIntrospection: stores.sharedAnswers(.introspection, for: loop))
        let replay = stores.replay(for: loop)
        let login = LoginService(
            loop: loop, shared: stores.loginShared, log: log, tokens: tokens, wallClock: wallClock,
            makeStores: { stores.loginStores(for: loop, config: $0, settings: $1, wallClock: wallClock) })
        authentication = Authentication(
            tokens: tokens, replay: replay, authenticator: TokenAuthenticator(validator: tokens, replay: replay),
            login: login)
        // Replaced by the worker's first `apply`, with the route plans.
        current = AppliedConfig(
            config: config, requestPolicy: RouteResolver.Policy(config, router: Router(routes: []), plans: []))
        ids = RequestIDGenerator(worker: id, processPrefix: processPrefix)
        modules = ModuleServices(
            config.modules.catalog,
            ModuleContext(loop: loop, log: log, wallClock: wallClock, stores: stores, config: config))
        let accessLog = config.accessLog.output.map {
            AccessLogWriter(sink: accessLogSink ?? .standardOutput, output: $0, loop: loop)
        }
        self.accessLog = accessLog
        tracer = spanExporter.map { Tracer(config: $0.config, exporter: $0, loop: loop) }
        let tunnels = Tunnels(loop: loop, log: log, login: login, accessLog: accessLog)
        let nonces = UpstreamNonces()
        proxying = Proxying(
            spool: spool, nonces: nonces, tunnels: tunnels,
            identity: UpstreamIdentity(
                log: log, wallClock: wallClock, assertions: modules[IdentityAssertionsModule.self],
                exchanger: modules[TokenExchangeModule.self], nonces: nonces))
        loop.callObserver = tracer
        tunnels.services = self
        modules.attach(self)
    }

    /// The config the route plans about to be made are for: their stages read it when made.
    /// Loop-thread only, between requests: `apply` follows at once with the plans.
    func prepare(_ new: GatewayConfig) { current.config = new }

    /// Swaps in a new config and its request policy (route plans) for requests that start
    /// from now on. The authenticator has the config already: the plans' token rules are
    /// made by it.
    func apply(_ new: GatewayConfig, policy: RouteResolver.Policy) {
        current.apply(new, policy: policy)
        authentication.login.apply(new)
        modules.apply(new)
    }

    /// From now on answers close their connection; `idle` is called (on this loop) whenever
    /// the last request or tunnel may have ended.
    func drain(idle: @escaping () -> Void) {
        drainState = Drain(draining: true, idle: idle)
    }

    /// Tells a draining worker that a request or a tunnel ended.
    func requestOrTunnelEnded() {
        if drainState.draining { drainState.idle?() }
    }

    func clock() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The public origin of this request, as far as it can be trusted (see RequestOrigin).
    func origin(_ forwarded: ForwardedHeaders) -> RequestOrigin.Origin? {
        RequestOrigin.select(
            publicURLs: config.publicURLs, scheme: forwarded.forwardedProto, host: forwarded.forwardedHost ?? "",
            fromTrustedProxy: forwarded.originFromTrustedProxy)
    }

    /// Reads a body the gateway must read itself (a form token, the logout form, a
    /// back-channel logout token, an MCP call), bounded by `limit`; a larger one gets 413 and
    /// is never buffered whole.
    func readOwnBody(
        _ ex: ServerExchange, _ ctx: RequestContext, limit: Int = ownBodyLimit, then use: @escaping ([UInt8]) -> Void
    ) {
        ex.body.collect(limit: limit) { [unowned self] result in
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
}

/// The config a worker's requests start with, and what of it they read on every request,
/// worked out once per config. Swapped whole by `WorkerServices.apply`.
struct AppliedConfig {
    var config: GatewayConfig
    var requestPolicy: RouteResolver.Policy
    /// Bumped by every `apply`: what is worked out once per connection and config.
    private(set) var generation = 0
    private(set) var decisionEnabled = false
    private(set) var hasTrustedProxies = false
    /// Where `rd` may send a browser back to.
    private(set) var returnPolicy = ReturnTo()
    /// The last Host value normalized here (RouteResolver.prepare): a worker's memo, kept
    /// across configs.
    let hosts = HostMemo()

    init(config: GatewayConfig, requestPolicy: RouteResolver.Policy) {
        self.config = config
        self.requestPolicy = requestPolicy
    }

    mutating func apply(_ new: GatewayConfig, policy: RouteResolver.Policy) {
        config = new
        requestPolicy = policy
        decisionEnabled = new.decision.enabled
        hasTrustedProxies = !new.trustedProxies.isEmpty
        generation += 1
        returnPolicy = ReturnTo(allowedHosts: new.login.allowedRedirectHosts, allowHTTP: !new.session.secureCookie)
    }
}

/// How a worker knows a request's caller.
struct Authentication {
    /// Token routes: verified-token cache and this worker's copy of issuer keys.
    let tokens: AccessTokenValidator
    /// Ids seen once and refused again (DPoP proofs' `jti`, signatures' nonces): the process's
    /// memory or Redis.
    let replay: ReplayStore
    /// The `bearer` / `dpop` / `token` checks.
    let authenticator: TokenAuthenticator
    /// Browser logins and sessions.
    let login: LoginService
}

/// The process's disk budgets for what the gateway spools, shared by every worker.
struct SpoolBudgets {
    /// Spooled answers (`limits.spool_total`).
    var responses: SpoolBudget?
    /// Buffered request bodies (`limits.request_spool_total`).
    var requests: SpoolBudget?
}

/// What a worker's proxied requests share.
struct Proxying {
    /// The process's disk for spooled answers; nil: none.
    let spoolBudget: SpoolBudget?
    /// Request buffering's disk budget, shared by workers.
    let requestSpoolBudget: SpoolBudget?
    /// The newest DPoP nonce of each upstream the gateway sends DPoP-bound tokens to.
    let upstreamNonces: UpstreamNonces
    /// Upstream 5xx answers and failures, for the status page.
    let upstreamOutcomes = UpstreamOutcomes()
    /// Open tunnels (WebSocket after a 101) and their watches.
    let tunnels: Tunnels
    /// What a route tells its upstream about an authenticated caller.
    let identity: UpstreamIdentity

    init(spool: SpoolBudgets, nonces: UpstreamNonces, tunnels: Tunnels, identity: UpstreamIdentity) {
        spoolBudget = spool.responses
        requestSpoolBudget = spool.requests
        upstreamNonces = nonces
        self.tunnels = tunnels
        self.identity = identity
    }
}

/// A draining worker's state: from `drain` on, answers close their connection and `idle` is
/// called whenever the last request or tunnel may have ended.
private struct Drain {
    var draining = false
    var idle: (() -> Void)?
}
