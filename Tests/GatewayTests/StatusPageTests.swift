import Foundation
import JOSE
import Reactor
import Testing

@testable import Gateway

/// The status page's rendering without sockets: what `/status.json` and `/status` say about a
/// config, that config text is escaped, and that no secret of the config reaches either.
@Suite("Status page: JSON and HTML of the report")
struct StatusPageTests {
    static let secrets = [
        "q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE=", "client-secret-Zq8vT3kLmN", "redis-pass-Wk4nQ7",
        "decision-secret-Hx5eR2pYu9"
    ]
    static let hostileName = #"<script>alert("x")</script>&'"#

    static let yaml = """
        public_url: https://app.example.com
        session: { keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] }
        store: "redis://:redis-pass-Wk4nQ7@127.0.0.1:6379/0"
        trusted_proxies: [10.0.0.0/8]
        decision: { secret: "decision-secret-Hx5eR2pYu9" }
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
          two: { issuer: "https://idp.two/realm", discovery: true, audiences: [api] }
        clients:
          web: { issuer: two, client_id: web-app, auth: client_secret_basic, secret: "client-secret-Zq8vT3kLmN" }
        upstreams:
          app: { url: "http://127.0.0.1:8081/base" }
        routes:
          - name: '\(hostileName.replacingOccurrences(of: "'", with: "''"))'
            match: { host: "*.example.com", path_prefix: /api/, methods: [GET, POST] }
            upstream: app
            auth: bearer
            issuers: [one]
          - name: web
            match: { path: /app }
            upstream: app
            auth: login
            client: web
          - match: { path_prefix: / }
            upstream: app
            auth: none
        """

    static func report(history: ConfigHistory = ConfigHistory(startedAt: 1_790_000_000)) throws -> StatusReport {
        let config = try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 2).get()
        guard case .redis(let url, _) = config.store, let deployment = RedisDeployment(url: url) else {
            throw ReactorError("the test config has a Redis store")
        }
        var keys = IssuerKeyState()
        keys.loaded = true
        keys.keyIDs = ["kid-2026", "kid-2025"]
        keys.lastFetch = 1_790_000_100
        keys.lastError = (1_790_000_050, "HTTP 503 from https://idp.two/jwks")
        keys.failures = 1
        var workers = WorkerStatus()
        workers.generations = [1, 1]
        workers.upstreams["app"] = UpstreamStatus(idle: 3, active: 1, recent5xx: 2, total5xx: 5)
        workers.tunnelsOpen = 4
        workers.routes["web"] = RouteAnswers(total: [0, 7, 2, 3, 1], recent: [0, 4, 0, 1, 0])
        return StatusReport(
            version: "9.9.9", now: 1_790_000_200, started: (1_789_990_000, 10_200.7), config: config, history: history,
            issuerKeys: ["two": keys],
            store: .redis(
                deployment: deployment.description, up: true, role: "master", latency: 0.0004, lastError: nil,
                checkedAt: 1_790_000_190),
            workers: workers)
    }

    static func object(_ json: String) throws -> JSONObject {
        guard case .object(let o) = try JSONParser.parse(Array(json.utf8)) else {
            throw ReactorError("not a JSON object")
        }
        return o
    }

    /// The objects of a JSON array (none if it is not one).
    static func objects(_ v: JSONValue?) -> [JSONObject] {
        (v?.array ?? []).compactMap { $0.object }
    }

    @Test func jsonListsRoutesIssuersUpstreamsStoreAndTunnels() throws {
        let o = try Self.object(try Self.report().json)
        #expect(o["version"]?.string == "9.9.9")
        #expect(o["generated_at"]?.string == "2026-09-21T14:16:40Z")
        let routes = Self.objects(o["routes"])
        try #require(routes.count == 3)
        #expect(routes.map { $0["name"]?.string } == [Self.hostileName, "web", "routes[2]"])
        #expect(routes.map { $0["auth"]?.string } == ["bearer", "login", "none"])
        #expect(routes[0]["host"]?.string == "*.example.com" && routes[0]["path"]?.string == "/api/")
        #expect(routes[0]["match"]?.string == "prefix" && routes[1]["match"]?.string == "exact")
        #expect(routes[0]["methods"]?.array == [.string("GET"), .string("POST")])
        #expect(routes[0]["issuers"]?.array == [.string("one")] && routes[1]["clients"]?.array == [.string("web")])
        #expect(routes[2]["host"] == .null)
        let issuers = Self.objects(o["issuers"])
        try #require(issuers.count == 2)
        #expect(issuers.map { $0["name"]?.string } == ["one", "two"])
        #expect(issuers[0]["keys_from"]?.string == "jwks_file" && issuers[0]["keys_loaded"] == .bool(false))
        #expect(issuers[1]["keys_from"]?.string == "discovery")
        #expect(issuers[1]["key_ids"]?.array == [.string("kid-2026"), .string("kid-2025")])
        #expect(issuers[1]["last_fetch"]?.string == "2026-09-21T14:15:00Z")
        #expect(issuers[1]["last_error"]?.string == "HTTP 503 from https://idp.two/jwks")
        #expect(issuers[1]["issuer"]?.string == "https://idp.two/realm")
        let upstream = try #require(o["upstreams"]?.array?.first?.object)
        #expect(upstream["url"]?.string == "http://127.0.0.1:8081/base")
        #expect(upstream["idle_connections"]?.int64 == 3 && upstream["active_connections"]?.int64 == 1)
        #expect(upstream["recent_5xx"]?.int64 == 2 && upstream["total_5xx"]?.int64 == 5)
        let store = try #require(o["store"]?.object)
        #expect(store["kind"]?.string == "redis" && store["role"]?.string == "master" && store["up"] == .bool(true))
        #expect(store["latency_ms"]?.double == 0.4)
        #expect(o["tunnels"]?.object?["open"]?.int64 == 4)
        let config = try #require(o["config"]?.object)
        #expect(config["generation"]?.int64 == 1 && config["worker_generations"]?.array?.count == 2)
        #expect(config["reloads"]?.array == [])
    }

    /// When the process started and how long it has run; each route's answers by status class,
    /// since start and in the recent window, every class always said.
    @Test func jsonSaysTheStartAndEachRoutesAnswers() throws {
        let o = try Self.object(try Self.report().json)
        #expect(o["started_at"]?.string == "2026-09-21T11:26:40Z")
        #expect(o["uptime_seconds"]?.int64 == 10_200)
        #expect(o["recent_window_seconds"]?.int64 == 300)
        let routes = Self.objects(o["routes"])
        try #require(routes.count == 3)
        func classes(_ r: JSONObject, _ which: String) -> [Int64?] {
            let c = r["requests"]?.object?[which]?.object
            return ["1xx", "2xx", "3xx", "4xx", "5xx"].map { c?[$0]?.int64 }
        }
        #expect(classes(routes[1], "total") == [0, 7, 2, 3, 1])
        #expect(classes(routes[1], "recent") == [0, 4, 0, 1, 0])
        // A route nothing reached says zeros, not nothing.
        #expect(classes(routes[0], "total") == [0, 0, 0, 0, 0])
        let html = try Self.report().html
        #expect(html.contains("started 2026-09-21T11:26:40Z, up 2h 50m 0s"))
        #expect(html.contains("<td>2xx 4 · 4xx 1</td><td>2xx 7 · 3xx 2 · 4xx 3 · 5xx 1</td>"))
        #expect(html.contains("<td>none</td><td>none</td>"))
    }

    @Test(arguments: [(0.0, "0s"), (59.9, "59s"), (61, "1m 1s"), (3600, "1h 0m 0s"), (90_061, "1d 1h 1m 1s")])
    func uptimeReadsInUnits(seconds: Double, text: String) {
        #expect(StatusReport.duration(seconds) == text)
    }

    @Test func reloadsAreListedNewestFirstWithProblemPlacesOnly() throws {
        var history = ConfigHistory(startedAt: 1_790_000_000)
        history.refused(
            at: 1_790_000_010,
            problems: [ConfigProblem(path: "clients.web.secret", line: 7, message: "too short: hunter2")])
        history.applied(at: 1_790_000_020, restartNeeded: false)
        let json = try Self.report(history: history).json
        let reloads = Self.objects(try Self.object(json)["config"]?.object?["reloads"])
        try #require(reloads.count == 2)
        #expect(reloads.map { $0["outcome"]?.string } == ["applied", "refused"])
        #expect(reloads.map { $0["generation"]?.int64 } == [2, 1])
        #expect(reloads[1]["problems"]?.array == [.string("clients.web.secret, line 7")])
        #expect(!json.contains("hunter2"))
        #expect(try Self.report(history: history).html.contains("clients.web.secret, line 7"))
    }

    @Test func htmlEscapesConfigText() throws {
        let html = try Self.report().html
        #expect(!html.contains("<script"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"))
        #expect(html.contains("kid-2026, kid-2025") && html.contains("*.example.com"))
        #expect(!html.contains("src=") && !html.contains("href="))
    }

    @Test(arguments: ["json", "html"])
    func noSecretOfTheConfigIsShown(_ format: String) throws {
        let report = try Self.report()
        let text = format == "json" ? report.json : report.html
        for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) in \(format)") }
        #expect(text.contains("127.0.0.1:6379"))
    }
}

@Suite("Status page: recent counts and reload history")
struct StatusCountsTests {
    @Test func recentCountKeepsFiveMinutes() {
        var c = RecentCount()
        c.record(at: 1000)
        c.record(at: 1010)
        c.record(at: 1130)
        #expect(c.count(at: 1130) == 3)
        // 1000 and 1010 are minute 16; at minute 21 they have left the window.
        #expect(c.count(at: 1260) == 1 && c.count(at: 1300) == 1)
        #expect(c.count(at: 1440) == 0)
        #expect(c.total == 3)
    }

    @Test func aStaleBucketIsReused() {
        var c = RecentCount()
        c.record(at: 60)
        c.record(at: 60 + 5 * 60)
        #expect(c.count(at: 60 + 5 * 60) == 1 && c.total == 2)
    }

    @Test func historyCountsGenerationsAndIsBounded() {
        var h = ConfigHistory(startedAt: 0)
        #expect(h.generation == 1 && h.reloads.isEmpty)
        h.refused(at: 1, problems: [ConfigProblem(path: "", line: nil, message: "not YAML")])
        #expect(h.generation == 1 && h.reloads.last?.problems == ["the file"])
        for t in 2..<40 { h.applied(at: Double(t), restartNeeded: t == 39) }
        #expect(h.generation == 39 && h.loadedAt == 39)
        #expect(h.reloads.count == ConfigHistory.limit && h.reloads.last?.restartNeeded == true)
        #expect(h.reloads.first?.time == 20)
    }
}
