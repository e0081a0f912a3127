import Reactor

/// The admin listener (never the public one): `/healthz` (process alive), `/readyz`
/// (accepting traffic), `/metrics` (Prometheus text), `/status` and `/status.json` (the
/// status page). Runs on the main loop; metrics and status are gathered by asking each
/// worker's loop for a snapshot, so no worker waits on another or on this loop.
final class AdminEndpoints {
    private let loop: EventLoop
    private let workers: [Worker]
    private let readiness: () -> (ready: Bool, reason: String)
    /// More metrics from the main loop's own state (issuer keys).
    var extraMetrics: () -> String = { "" }
    /// The status page from the main loop's own state and the workers' snapshots added up.
    var statusReport: ((WorkerStatus) -> StatusReport)?
    private var server: ExchangeServer?

    init(loop: EventLoop, workers: [Worker], readiness: @escaping () -> (ready: Bool, reason: String)) {
        self.loop = loop
        self.workers = workers
        self.readiness = readiness
    }

    /// `tls`: the admin listener's context (`admin_listen.tls`), or nil for plain HTTP.
    func serve(on addr: SocketAddress, tls: TLSContext?) throws {
        var options = HTTPServerOptions()
        options.maxBodySize = 0
        options.idleTimeout = 10
        options.maxConnections = 256
        let server = HTTPServer(loop: loop, options: options, tls: tls) { [unowned self] exchange in
            self.handle(exchange)
        }
        try Listener.claim(host: addr.host, port: addr.port)
        try server.serve(listeningSocket: try Listener.open(host: addr.host, port: addr.port))
        self.server = server
    }

    private func handle(_ exchange: ServerExchange) {
        let req = exchange.responder
        exchange.body.discard()
        let path = exchange.head.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        switch (exchange.head.method, path) {
        case (.GET?, "/healthz"), (.HEAD?, "/healthz"):
            reply(req, 200, "text/plain", "ok\n")
        case (.GET?, "/readyz"), (.HEAD?, "/readyz"):
            let r = readiness()
            reply(req, r.ready ? 200 : 503, "text/plain", r.ready ? "\(r.reason)\n" : "not ready: \(r.reason)\n")
        case (.GET?, "/metrics"):
            gather(
                take: { $0.snapshot() },
                done: { [readiness] (snapshot: MetricsSnapshot) in
                    self.reply(
                        req, 200, "text/plain; version=0.0.4",
                        snapshot.prometheusText(ready: readiness().ready) + self.extraMetrics())
                })
        case (.GET?, "/status"), (.GET?, "/status.json"):
            guard let statusReport else { return reply(req, 404, "text/plain", "not found\n") }
            let asJSON = path == "/status.json"
            gather(
                take: { $0.statusSnapshot() },
                done: { (workers: WorkerStatus) in
                    let report = statusReport(workers)
                    if asJSON {
                        self.reply(req, 200, "application/json", report.json)
                    } else {
                        self.reply(req, 200, "text/html; charset=utf-8", report.html)
                    }
                })
        default:
            reply(req, 404, "text/plain", "not found\n")
        }
    }

    /// Asks each worker's loop for its part (`take`, run there), adds the parts up on this
    /// loop and calls `done` here once every worker has answered.
    private func gather<Part: WorkerPart>(take: @escaping (Worker) -> Part, done: @escaping (Part) -> Void) {
        var total = Part()
        var pending = workers.count
        if pending == 0 {
            done(total)
            return
        }
        for w in workers {
            w.loop.execute { [loop] in
                let part = take(w)
                loop.execute {
                    total.add(part)
                    pending -= 1
                    if pending == 0 { done(total) }
                }
            }
        }
    }

    private func reply(_ responder: Responder, _ status: Int, _ type: String, _ body: String) {
        GatewayResponse(status: status, body: body, contentType: type).send(responder, requestID: nil, close: false)
    }
}

/// What each worker reports to an admin endpoint, added up over the workers.
protocol WorkerPart: Sendable {
    init()
    mutating func add(_ other: Self)
}

extension MetricsSnapshot: WorkerPart {}
extension WorkerStatus: WorkerPart {}
