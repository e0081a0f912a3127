import Reactor

/// The admin listener (never the public one): `/healthz` (process alive), `/readyz`
/// (accepting traffic), `/metrics` (Prometheus text). Runs on the main loop; metrics are
/// gathered by asking each worker's loop for a snapshot.
final class AdminEndpoints {
    private let loop: EventLoop
    private let workers: [Worker]
    private let readiness: () -> (ready: Bool, reason: String)
    /// More metrics from the main loop's own state (issuer keys).
    var extraMetrics: () -> String = { "" }
    private var server: ExchangeServer?

    init(loop: EventLoop, workers: [Worker], readiness: @escaping () -> (ready: Bool, reason: String)) {
        self.loop = loop
        self.workers = workers
        self.readiness = readiness
    }

    func serve(on addr: SocketAddress) throws {
        var options = HTTPServerOptions()
        options.maxBodySize = 0
        options.idleTimeout = 10
        options.maxConnections = 256
        let server = HTTP1Server(loop: loop, options: options, tls: nil) { [unowned self] exchange in
            self.handle(exchange)
        }
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
            gather { [readiness] snapshot in
                self.reply(
                    req, 200, "text/plain; version=0.0.4",
                    snapshot.prometheusText(ready: readiness().ready) + self.extraMetrics())
            }
        default:
            reply(req, 404, "text/plain", "not found\n")
        }
    }

    private func gather(_ done: @escaping (MetricsSnapshot) -> Void) {
        var total = MetricsSnapshot()
        var pending = workers.count
        if pending == 0 {
            done(total)
            return
        }
        for w in workers {
            w.loop.execute { [loop] in
                let snap = w.snapshot()
                loop.execute {
                    total.add(snap)
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
