import Foundation
public import Logging
import Reactor

/// The running gateway: workers, the admin listener and signal handling on the main loop.
/// SIGHUP reloads the config file (a bad file is refused and the old config keeps serving);
/// SIGTERM/SIGINT stop accepting, let in-flight requests finish within the grace period,
/// and return from `run()`.
public final class GatewayServer {
    private let configPath: String?
    private var config: GatewayConfig
    private let log: Logger
    private let mainLoop = EventLoop()
    private var workers: [Worker] = []
    private var admin: AdminEndpoints?
    private var signals: [SignalWatcher] = []
    private var shuttingDown = false
    private var graceTimer: LoopTimer?
    private var keyService: IssuerKeyService?
    /// The modules' main-loop parts (`GatewayModule.Main`).
    private var modules: ModuleMains?
    private var storeHealth: StoreHealth?
    private var listenerCertificates: ListenerCertificates?
    private var spoolBudget: SpoolBudget?
    private var requestSpoolBudget: SpoolBudget?
    /// The access log's file, when it has one (else its lines share standard output).
    private var accessLogFile: LogSink?
    /// Where spans go when `tracing` is on (its own thread).
    private var spanExporter: SpanExporter?
    /// The main loop's spans: key and discovery fetches, each a trace of its own.
    private var mainTracer: Tracer?
    /// The workers' and the key service's "now".
    private let wallClock: any WallClock = SystemClock()
    /// The build's version, for the status page.
    private let version: String
    /// The config's generation and reloads, for the status page.
    private var history: ConfigHistory
    /// When the process started, by the wall clock and the monotonic one (the status page's
    /// `started_at` and `uptime_seconds`).
    private let startedAt: Double
    private let startedUptime = ProcessInfo.processInfo.systemUptime

    public init(config: GatewayConfig, configPath: String?, log: Logger, version: String = "unknown") {
        self.config = config
        self.configPath = configPath
        self.log = log
        self.version = version
        startedAt = wallClock.now
        history = ConfigHistory(startedAt: startedAt)
    }

    /// Binds everything, then serves until shut down. Throws if a socket or TLS file fails.
    public func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let certificates = try ListenerCertificates(
            config: config.listeners + (config.adminListener.map { [$0] } ?? []), log: log)
        certificates.watch(loop: mainLoop)
        listenerCertificates = certificates
        warnInsecureUpstreams(config)
        let prefix = RequestIDGenerator.makeProcessPrefix()
        let stores = StoreBackend(config.store, replayCapacity: config.dpop.replayCacheEntries)
        if config.session.keys.isEmpty && !config.browserLoginClients.isEmpty {
            log.warning(
                "session.keys is not set: sessions are sealed with a random key and end when tokengate restarts (replicas need shared keys)"
            )
        }
        if config.dpop.proofSigner == nil && !config.session.keys.isEmpty
            && config.clients.values.contains(where: { $0.login.dpop })
        {
            // Shared session keys mean replicas: each would sign with its own random DPoP key,
            // and the others' session tokens (bound to one key's jkt) would not go upstream.
            log.warning(
                "dpop.key_file is not set: this process's DPoP key is random; replicas sharing sessions need one key_file"
            )
        }
        // Compiled once; every worker reads the same one, and shares each route's config.
        let router = Router(routes: config.routes)
        let routes = config.routes.map(SharedRoute.init)
        // limits.max_connections is per process: one count for every worker's listeners.
        let budget = ConnectionBudget(limit: config.limits.maxConnections)
        let reclaimWarning = ReclaimWarning()
        if let output = config.accessLog.output, case .file(let path) = output.destination {
            accessLogFile = try LogSink(path: path, capacity: output.sinkCapacity)
        }
        if let tracing = config.tracing {
            let exporter = SpanExporter(config: tracing, version: version)
            exporter.start()
            spanExporter = exporter
            let tracer = Tracer(config: tracing, exporter: exporter, loop: mainLoop, background: true)
            mainLoop.callObserver = tracer
            mainTracer = tracer
        }
        let spoolBudget = SpoolBudget(limit: config.limits.spoolTotal)
        self.spoolBudget = spoolBudget
        let requestSpoolBudget = SpoolBudget(
            limit: config.limits.requestSpoolTotal,
            perSource: Int(Double(config.limits.requestSpoolTotal) * config.limits.requestSpoolPerClient))
        self.requestSpoolBudget = requestSpoolBudget
        for l in config.listeners { try Listener.claim(host: l.address.host, port: l.address.port) }
        for id in 0..<config.workers {
            let worker = Worker(
                id: id, config: config, log: log, processPrefix: prefix, stores: stores, wallClock: wallClock,
                router: router, routes: routes, accessLogSink: accessLogFile, spanExporter: spanExporter,
                spool: SpoolBudgets(responses: spoolBudget, requests: requestSpoolBudget))
            var sockets: [(fd: Int32, tls: TLSContext?, http2: Bool)] = []
            for l in config.listeners {
                sockets.append(
                    (
                        try Listener.open(host: l.address.host, port: l.address.port),
                        certificates.context(for: l.address), l.http2
                    ))
            }
            try worker.serve(sockets: sockets, budget: budget, reclaimWarning: reclaimWarning)
            workers.append(worker)
        }
        if let deployment = stores.redisDeployment {
            storeHealth = StoreHealth(loop: mainLoop, deployment: deployment, wallClock: wallClock)
        }
        let keys = IssuerKeyService(loop: mainLoop, log: log, wallClock: wallClock)
        keys.attach(workers)
        keys.apply(config)
        keyService = keys
        // Before any worker's thread starts: a push that comes at once finds its transmitter.
        modules = ModuleMains(
            MainContext(
                loop: mainLoop, log: log, wallClock: wallClock, stores: stores, workers: workers, issuerKeys: keys,
                config: config))
        if let addr = config.adminListen {
            let endpoints = AdminEndpoints(
                loop: mainLoop, workers: workers, readiness: { [unowned self] in self.readiness() })
            endpoints.extraMetrics = { [weak keys, weak self, wallClock] in
                (keys?.metricsText(now: wallClock.now) ?? "") + (self?.storeHealth?.metricsText ?? "")
                    + LogSinkMetrics.text(self?.logSinks ?? []) + (self?.spanExporter?.metricsText ?? "")
                    + (self?.listenerCertificates?.metricsText ?? "") + (self?.modules?.metricsText ?? "")
                    + SpoolMetrics.text([self?.spoolBudget, self?.requestSpoolBudget].compactMap { $0 })
            }
            endpoints.statusReport = { [unowned self] workers in self.statusReport(workers) }
            try endpoints.serve(on: addr, tls: certificates.context(for: addr))
            admin = endpoints
        }
        signals = [
            SignalWatcher(loop: mainLoop, signal: SIGHUP) { [unowned self] in self.reload() },
            SignalWatcher(loop: mainLoop, signal: SIGTERM) { [unowned self] in self.shutdown() },
            SignalWatcher(loop: mainLoop, signal: SIGINT) { [unowned self] in self.shutdown() },
            // logrotate's postrotate: the access log's file is opened again by its path.
            SignalWatcher(loop: mainLoop, signal: SIGUSR1) { [unowned self] in self.reopenLogs() }
        ]
        for w in workers { w.startThread() }
        log.info(
            "tokengate serving",
            metadata: [
                "listen": .array(config.listeners.map { .string("\($0.address)\($0.tls != nil ? " (tls)" : "")") }),
                "admin": .string(config.adminListen.map { "\($0)" } ?? "off"),
                "workers": .stringConvertible(config.workers), "routes": .stringConvertible(config.routes.count)
            ])
        mainLoop.run()
        // Lines still waiting go out before the process exits (bounded: a sink that takes
        // nothing must not keep a stopped gateway alive).
        accessLogFile?.close(within: 3)
        // Spans still queued go to the collector, for at most 2 s.
        mainTracer?.flush()
        spanExporter?.close(within: 2)
    }

    /// Writes what standard output and standard error still hold (each waits at most 2 s:
    /// a pipe nobody reads must not keep the process from exiting). Call once, at exit.
    public static func closeStandardLogs() {
        LogSink.standardOutput.close(within: 2)
        LogSink.standardError.close(within: 1)
    }

    /// Every sink whose counters `/metrics` shows.
    private var logSinks: [LogSink] {
        [LogSink.standardOutput, LogSink.standardError] + (accessLogFile.map { [$0] } ?? [])
    }

    private func reopenLogs() {
        guard let file = accessLogFile else { return }
        // Lines buffered in the workers go to the new file, as nginx's do.
        file.reopen()
        log.info("access log reopened", metadata: ["path": .string(file.destination.name)])
    }

    /// Ready: not shutting down, and every issuer's keys loaded at least once (the last good
    /// set keeps serving through later IdP failures).
    private func readiness() -> (ready: Bool, reason: String) {
        if shuttingDown { return (false, "shutting down") }
        let missing = keyService?.missing ?? []
        // A down store stays a note, not "not ready": every replica shares it, and taking them
        // all out of the load balancer at once would stop the routes that do not need it too.
        if let health = storeHealth, !health.up, missing.isEmpty {
            return (
                true,
                "ready (the shared store does not answer: \(health.lastError ?? "unknown"); requests that need it get 503)"
            )
        }
        if !missing.isEmpty { return (false, "issuer keys not loaded: \(missing.joined(separator: ", "))") }
        for case .notReady(let why) in modules?.readiness ?? [] { return (false, why) }
        for case .readyWithNote(let note) in modules?.readiness ?? [] { return (true, "ready (\(note))") }
        let stale = keyService?.stale ?? []
        if !stale.isEmpty {
            return (true, "ready (serving last good keys, refresh failing: \(stale.joined(separator: ", ")))")
        }
        let expiring = listenerCertificates?.expiring(now: wallClock.now, within: StatusReport.expiryWarning) ?? []
        if !expiring.isEmpty {
            return (true, "ready (TLS certificates expire within 7 days: \(expiring.joined(separator: ", ")))")
        }
        return (true, "ready")
    }

    private func reload() {
        guard !shuttingDown else { return }
        // The files named at start, read again whether or not the config changed.
        listenerCertificates?.reloadAll()
        guard let path = configPath else { return }
        switch ConfigParser.load(path: path) {
        case .failure(let err):
            history.refused(at: wallClock.now, problems: err.problems)
            log.error(
                "reload refused: the new config has problems; the old config keeps serving",
                metadata: ["problems": .array(err.problems.map { .string($0.description) })])
        case .success(var new):
            // Sockets and threads are fixed at start; a change to them needs a restart.
            let restartNeeded =
                new.workers != config.workers || new.listeners.map(\.address) != config.listeners.map(\.address)
                || new.adminListen != config.adminListen || new.listeners.map(\.tls) != config.listeners.map(\.tls)
                || new.adminTLS != config.adminTLS
                || new.store != config.store || new.dpop.replayCacheEntries != config.dpop.replayCacheEntries
                || new.accessLog != config.accessLog || new.tracing != config.tracing
            if restartNeeded {
                log.warning(
                    "reload: listen, admin_listen, workers, TLS, store, dpop.replay_cache_entries, access_log and tracing changes take effect only after a restart"
                )
                new.accessLog = config.accessLog
                new.tracing = config.tracing
                new.workers = config.workers
                new.listeners = config.listeners
                new.adminListen = config.adminListen
                new.adminTLS = config.adminTLS
                new.store = config.store
                new.dpop.replayCacheEntries = config.dpop.replayCacheEntries
            }
            config = new
            history.applied(at: wallClock.now, restartNeeded: restartNeeded)
            warnInsecureUpstreams(new)
            keyService?.apply(new)
            modules?.apply(new)
            let router = Router(routes: new.routes)
            let routes = new.routes.map(SharedRoute.init)
            // Once every worker has let go of its old plans, the memory the old config and
            // the new parse held goes back to the system.
            var applying = workers.count
            for w in workers {
                w.loop.execute { [mainLoop] in
                    w.apply(new, router: router, routes: routes)
                    mainLoop.execute {
                        applying -= 1
                        if applying == 0 { FreedMemory.release() }
                    }
                }
            }
            log.info("config reloaded", metadata: ["routes": .stringConvertible(new.routes.count)])
        }
    }

    /// The status page: this loop's state (config, reloads, issuer keys, store) and the
    /// workers' snapshots added up.
    private func statusReport(_ workers: WorkerStatus) -> StatusReport {
        let store: StatusReport.Store =
            storeHealth.map {
                .redis(
                    deployment: $0.deployment, up: $0.up, role: $0.role, latency: $0.latency, lastError: $0.lastError,
                    checkedAt: $0.checkedAt)
            } ?? .memory
        return StatusReport(
            version: version, now: wallClock.now,
            started: (startedAt, ProcessInfo.processInfo.systemUptime - startedUptime), config: config,
            history: history,
            issuerKeys: keyService?.keyStates() ?? [:], store: store, workers: workers,
            certificates: (listenerCertificates?.listeners ?? []).flatMap { l in
                l.served.map {
                    StatusReport.Certificate(
                        listen: "\(l.address)", file: $0.files.certFile, notAfter: $0.notAfter, sha256: $0.fingerprint)
                }
            }, modules: modules)
    }

    /// `insecure_skip_verify: true` is said out loud each time it takes effect.
    private func warnInsecureUpstreams(_ config: GatewayConfig) {
        // The config's own warnings (ConfigWarnings.swift), said each time the config takes effect.
        for w in config.warnings { log.warning("config: \(w)") }
        for up in config.upstreams.values.sorted(by: { $0.name < $1.name }) where up.tls?.insecureSkipVerify == true {
            log.warning(
                "upstream TLS verification is OFF (insecure_skip_verify: true): anyone on the path can read and change its traffic",
                metadata: ["upstream": .string(up.name)])
        }
    }

    private func shutdown() {
        guard !shuttingDown else { return }
        shuttingDown = true
        log.info(
            "shutting down: draining in-flight requests",
            metadata: ["grace_s": .stringConvertible(config.limits.shutdownGrace)])
        var remaining = workers.count
        for w in workers {
            w.loop.execute { [mainLoop] in
                w.drain {
                    mainLoop.execute { [unowned self] in
                        remaining -= 1
                        if remaining == 0 { self.finish(clean: true) }
                    }
                }
            }
        }
        graceTimer = LoopTimer(loop: mainLoop, seconds: config.limits.shutdownGrace) { [unowned self] in
            self.finish(clean: false)
        }
    }

    private func finish(clean: Bool) {
        graceTimer?.cancel()
        if !clean { log.warning("grace period over: closing with requests still in flight") }
        // Each worker hands over what its access log holds, then stops; waited for (briefly)
        // so that no line is still in a worker's buffer when the sinks close.
        let stopped = DispatchSemaphore(value: 0)
        var waiting = 0
        for w in workers where !w.loopExited {
            waiting += 1
            w.loop.execute {
                w.services.accessLog?.flush()
                w.services.tracer?.flush()
                w.loop.stop()
                stopped.signal()
            }
        }
        let deadline = DispatchTime.now() + 2
        for _ in 0..<waiting { _ = stopped.wait(timeout: deadline) }
        // A loop with nothing left to wait for returns by itself: its thread is gone, and its
        // buffer is flushed from here (a no-op for the workers that flushed above).
        for w in workers where w.loopExited {
            w.services.accessLog?.flush()
            w.services.tracer?.flush()
        }
        log.info("stopped")
        mainLoop.stop()
    }
}
