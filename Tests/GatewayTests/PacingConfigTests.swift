import Reactor
import Testing

@testable import Gateway

/// `limits.body_deadline`, `limits.body_min_rate`, `limits.body_min_rate_grace` and
/// `upstreams.NAME.max_connections`, `max_pending`, `pending_timeout`: defaults, values,
/// every refusal with its key path, and each worker's share of the process's caps.
@Suite("Config: body pace and upstream connection caps")
struct PacingConfigTests {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: ".", cores: 2)
    }

    func problems(_ yaml: String) -> [String] {
        if case .failure(let e) = parse(yaml) { return e.problems.map(\.description) }
        return []
    }

    func config(limits: String = "", upstream: String = "", workers: Int = 2) -> String {
        """
        listen: 127.0.0.1:8080
        admin_listen: 127.0.0.1:9901
        workers: \(workers)
        limits: { shutdown_grace: 5s \(limits) }
        upstreams:
          app: { url: http://127.0.0.1:3000 \(upstream) }
        routes:
          - match: { path_prefix: / }
            upstream: app
            auth: none
        """
    }

    @Test func defaults() throws {
        let cfg = try parse(config()).get()
        // A body mostly sent at once, then trickled just above the rate, is still cut in 5 min.
        #expect(cfg.limits.bodyDeadline == 300)
        #expect(cfg.limits.requestSpoolPerClient == 0.1)
        #expect(cfg.limits.bodyMinRate == 1024 && cfg.limits.bodyMinRateGrace == 5)
        #expect(cfg.limits.bodyTimeout == 30)
        let app = try #require(cfg.upstreams["app"])
        #expect(app.maxConnections == 1024 && app.maxPending == 1024 && app.pendingTimeout == 5)
    }

    @Test func valuesAreRead() throws {
        let cfg = try parse(
            config(
                limits:
                    ", body_deadline: 10m, body_min_rate: 8KB/s, body_min_rate_grace: 2s, request_spool_per_client: 12.5%",
                upstream: ", max_connections: 50, max_pending: 0, pending_timeout: 250ms")
        ).get()
        #expect(cfg.limits.bodyDeadline == 600 && cfg.limits.requestSpoolPerClient == 0.125)
        #expect(cfg.limits.bodyMinRate == 8192 && cfg.limits.bodyMinRateGrace == 2)
        let app = try #require(cfg.upstreams["app"])
        #expect(app.maxConnections == 50 && app.maxPending == 0 && app.pendingTimeout == 0.25)
    }

    @Test func offTurnsTheBodyBoundsOff() throws {
        let cfg = try parse(config(limits: ", body_deadline: off, body_min_rate: off")).get()
        #expect(cfg.limits.bodyDeadline == nil && cfg.limits.bodyMinRate == 0)
        #expect(try parse(config(limits: ", body_min_rate: 0")).get().limits.bodyMinRate == 0)
    }

    @Test(arguments: [
        ("body_deadline: 500ms", "limits.body_deadline", "at least 1s"),
        ("body_deadline: soon", "limits.body_deadline", "or off"),
        ("body_min_rate: 1KB", "limits.body_min_rate", "size per second"),
        ("body_min_rate: fast/s", "limits.body_min_rate", "size per second"),
        ("body_min_rate: 2GB/s", "limits.body_min_rate", "up to 1GB/s"),
        ("body_min_rate_grace: 10ms", "limits.body_min_rate_grace", "from 100ms to 1h"),
        ("body_min_rate_grace: 2h", "limits.body_min_rate_grace", "from 100ms to 1h"),
        ("request_spool_per_client: 0.1", "limits.request_spool_per_client", "from 1% to 100%"),
        ("request_spool_per_client: 0.5%", "limits.request_spool_per_client", "from 1% to 100%"),
        ("request_spool_per_client: 120%", "limits.request_spool_per_client", "from 1% to 100%"),
        ("body_rate: 1KB/s", "limits", "body_rate")
    ])
    func limitRefusals(_ entry: String, _ path: String, _ words: String) {
        let found = problems(config(limits: ", " + entry))
        #expect(found.count == 1)
        #expect(found.first?.contains(path) == true && found.first?.contains(words) == true, "\(found)")
    }

    @Test(arguments: [
        ("max_connections: 0", "upstreams.app.max_connections", "from 1 to 1000000"),
        ("max_connections: many", "upstreams.app.max_connections", "from 1 to 1000000"),
        ("max_pending: -1", "upstreams.app.max_pending", "from 0"),
        ("pending_timeout: 0s", "upstreams.app.pending_timeout", "from 1ms to 300s"),
        ("pending_timeout: 10m", "upstreams.app.pending_timeout", "from 1ms to 300s")
    ])
    func upstreamRefusals(_ entry: String, _ path: String, _ words: String) {
        let found = problems(config(upstream: ", " + entry))
        #expect(found.count == 1)
        #expect(found.first?.contains(path) == true && found.first?.contains(words) == true, "\(found)")
    }

    /// Per process, shared out like `limits.max_tunnels`: each worker's pool gets its part,
    /// rounded up and at least one connection.
    @Test func eachWorkerPoolGetsItsShare() throws {
        let yaml = config(upstream: ", max_connections: 10, max_pending: 7, pending_timeout: 2s", workers: 4)
        let worker = try testWorker(yaml)
        let cfg = try parse(yaml).get()
        let app = try #require(cfg.upstreams["app"])
        let endpoint = worker.poolEndpoint(app, workers: 4)
        #expect(endpoint.maxConnections == 3 && endpoint.maxPending == 2 && endpoint.pendingTimeout == 2)
        var one = app
        one.maxConnections = 1
        #expect(worker.poolEndpoint(one, workers: 4).maxConnections == 1)
        #expect(worker.pools["app"]?.endpoint.maxConnections == 3)
    }
}
