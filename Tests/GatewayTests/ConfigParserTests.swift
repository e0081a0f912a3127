import Foundation
import Testing
import Yams

@testable import Gateway

@Suite("Config: one pass reports every problem with its key path")
struct ConfigParserTests {
    func parse(_ yaml: String, env: [String: String] = [:], dir: String = ".") -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: env, baseDirectory: dir, cores: 2)
    }

    func problems(_ yaml: String, env: [String: String] = [:]) -> [String] {
        if case .failure(let e) = parse(yaml, env: env) { return e.problems.map(\.description) }
        return []
    }

    let valid = """
        listen: 127.0.0.1:8080
        admin_listen: 127.0.0.1:9901
        workers: auto
        trusted_proxies: [10.0.0.0/8, "::1"]
        limits: { max_body_size: 1MB, shutdown_grace: 5s }
        upstreams:
          orders: { url: "http://127.0.0.1:3000/base/", connect_timeout: 250ms, timeout: 1m, host_header: preserve }
          web: { url: http://localhost:3001 }
        routes:
          - name: orders
            match: { path_prefix: /api/orders/, methods: [GET, post] }
            upstream: orders
            auth: none
          - match: { host: "*.example.com", path: /exact }
            upstream: web
            auth: none
        """

    @Test func validConfig() throws {
        let cfg = try parse(valid).get()
        #expect(cfg.workers == 2)
        #expect(cfg.listeners.first?.address == SocketAddress(host: "127.0.0.1", port: 8080))
        #expect(cfg.limits.maxBodySize == 1 << 20)
        #expect(cfg.limits.shutdownGrace == 5)
        let orders = try #require(cfg.upstreams["orders"])
        #expect(orders.basePath == "/base")
        #expect(orders.connectTimeout == 0.25)
        #expect(orders.timeout == 60)
        #expect(orders.hostHeader == .preserve)
        #expect(cfg.routes[0].name == "orders")
        #expect(cfg.routes[0].match.methods == [.GET, .POST])
        #expect(cfg.routes[1].name == "routes[1]")
        #expect(cfg.routes[1].match.host == .wildcard(suffix: ".example.com"))
        #expect(cfg.trustedProxies.count == 2)
    }

    @Test func undefinedUpstreamNamesTheDefinedOnes() {
        let p = problems(valid.replacingOccurrences(of: "upstream: web", with: "upstream: ordres"))
        #expect(p == ["line 15: routes[1].upstream: \"ordres\" is not defined; defined: orders, web"])
    }

    @Test func everyProblemAtOnce() {
        let yaml = """
            listen: nowhere
            workers: many
            lisen: 1
            trusted_proxies: [10.0.0.0/99]
            upstreams:
              a: { url: "ftp://x", timeout: soon }
            routes:
              - match: { path_prefix: "api", path: /x }
                upstream: b
                auth: sometimes
              - match: { path_prefix: /a/../b }
                upstream: a
            """
        let p = problems(yaml)
        let joined = p.joined(separator: "\n")
        #expect(p.count >= 9, "\(joined)")
        for expected in [
            "listen: \"nowhere\" is not host:port", "workers: must be auto or a number",
            "lisen: is not a known key; did you mean \"listen\"?", "trusted_proxies[0]:",
            "upstreams.a.url:", "routes[0].match: give one of path, path_prefix or path_template, not several",
            "routes[0].upstream: \"b\" is not defined", "routes[0].auth: must be one of",
            "routes[1].match.path_prefix:", "routes[1].auth: is missing"
        ] {
            #expect(joined.contains(expected), "missing: \(expected)\n\(joined)")
        }
    }

    @Test func authModesWithoutTheirSettingsAreRefusedNotIgnored() {
        let p = problems(valid.replacingOccurrences(of: "auth: none\n  - match", with: "auth: login\n  - match"))
        #expect(p.count == 1)
        #expect(p.first?.contains("auth: login needs client") == true)
    }

    @Test func environmentSubstitution() throws {
        let yaml =
            "listen: ${ADDR}\nadmin_listen: ${ADMIN:-127.0.0.1:9999}\nupstreams: { a: { url: \"http://${UP}\" } }\nroutes: [ { match: { path_prefix: / }, upstream: a, auth: none } ]\n"
        let cfg = try parse(yaml, env: ["ADDR": "0.0.0.0:8081", "UP": "10.0.0.1:99"]).get()
        #expect(cfg.listeners[0].address.port == 8081)
        #expect(cfg.adminListen?.port == 9999)
        #expect(cfg.upstreams["a"]?.host == "10.0.0.1")
        let p = problems(yaml, env: ["ADDR": "0.0.0.0:8081"])
        #expect(p.contains { $0.contains("environment variable UP is not set") })
    }

    @Test func environmentCannotInjectStructure() throws {
        let yaml =
            "listen: 127.0.0.1:1\nupstreams: { a: { url: \"${U}\" } }\nroutes: [ { match: { path_prefix: / }, upstream: a, auth: none } ]\n"
        let p = problems(yaml, env: ["U": "http://x:1\nadmin_listen: 0.0.0.0:1"])
        #expect(p.contains { $0.contains("upstreams.a.url") })
    }

    @Test func secretsFromFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tg-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try "s3cret\n".write(to: dir.appendingPathComponent("secret.txt"), atomically: true, encoding: .utf8)
        let r = ConfigReader(environment: [:], baseDirectory: dir.path)
        let node = try #require(try Yams.compose(yaml: "secret_file: secret.txt"))
        let map = try #require(r.mapping(node, path: "clients.web", section: nil))
        #expect(r.secret(map, key: "secret", path: "clients.web") == "s3cret")
        let both = try #require(try Yams.compose(yaml: "secret: a\nsecret_file: secret.txt"))
        #expect(r.secret(r.mapping(both, path: "c", section: nil)!, key: "secret", path: "c") == nil)
        #expect(r.problems.contains { $0.message.contains("not both") })
    }

    @Test func duplicateKeysAreReported() {
        let p = problems(valid + "\nworkers: 3\n")
        #expect(p.contains { $0.contains("workers: is given twice") })
    }

    @Test func emptyAndBrokenFiles() {
        #expect(problems("").first?.contains("empty") == true)
        #expect(problems("routes: [").first?.contains("not valid YAML") == true)
        #expect(problems("- a\n- b").first?.contains("must be a mapping") == true)
    }

    @Test("values", arguments: [("250ms", 0.25), ("2s", 2.0), ("5m", 300.0), ("1h", 3600.0), ("7", 7.0)])
    func durations(_ text: String, _ seconds: Double) {
        #expect(ConfigValues.duration(text) == seconds)
    }

    @Test func badValues() {
        #expect(ConfigValues.duration("-1s") == nil)
        #expect(ConfigValues.duration("soon") == nil)
        // At most ten years, checked after scaling: a span added to the clock or a timer
        // never reaches Int64's ends (1e306h is finite as written, infinite once scaled).
        #expect(ConfigValues.duration("87600h") == 315_360_000)
        for text in ["87601h", "1e306h", "1e19", "inf", "nan", "9223372036854775807s", "1e400ms"] {
            #expect(ConfigValues.duration(text) == nil, "\(text)")
        }
        #expect(ConfigValues.size("4MB") == 4 << 20)
        #expect(ConfigValues.size("512kb") == 512 << 10)
        #expect(ConfigValues.size("99999999999GB") == nil)
        #expect(ConfigValues.socketAddress(":8080") == SocketAddress(host: "0.0.0.0", port: 8080))
        #expect(ConfigValues.socketAddress("[::1]:80") == SocketAddress(host: "::1", port: 80))
        #expect(ConfigValues.socketAddress("host:0") == nil)
        #expect(ConfigValues.url("http://user@host/") == nil)
        #expect(ConfigValues.url("http://h:99/p/?q") == nil)
    }
}
