import Testing

@testable import Gateway

/// `upgrades:`, `close_at_token_expiry`, `limits.tunnel_idle_timeout` and `limits.max_tunnels`.
@Suite("Config: WebSocket upgrades and tunnel limits")
struct UpgradeConfigTests {
    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: ".", cores: 2)
    }

    func problems(_ yaml: String) -> [String] {
        if case .failure(let e) = parse(yaml) { return e.problems.map(\.description) }
        return []
    }

    func config(limits: String = "", route: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        admin_listen: 127.0.0.1:9901
        limits: { shutdown_grace: 5s \(limits) }
        upstreams:
          app: { url: http://127.0.0.1:3000 }
        routes:
          - match: { path_prefix: / }
            upstream: app
            auth: none
        \(route)
        """
    }

    @Test func defaults() throws {
        let cfg = try parse(config()).get()
        #expect(cfg.routes[0].options.upgrade.protocols == ["websocket"])
        #expect(cfg.limits.tunnelIdleTimeout == 300 && cfg.limits.maxTunnels == 10_000)
    }

    @Test func valuesAreRead() throws {
        let cfg = try parse(config(limits: ", tunnel_idle_timeout: 90s, max_tunnels: 50", route: "    upgrades: []"))
            .get()
        #expect(cfg.routes[0].options.upgrade.protocols.isEmpty)
        #expect(cfg.limits.tunnelIdleTimeout == 90 && cfg.limits.maxTunnels == 50)
        let ws = try parse(config(route: "    upgrades: [WebSocket]")).get()
        #expect(ws.routes[0].options.upgrade.protocols == ["websocket"])
    }

    @Test func badValuesSayWhatToWrite() {
        #expect(
            problems(config(route: "    upgrades: [h2c]")) == [
                "line 10: routes[0].upgrades[0]: \"h2c\" is not a supported upgrade; the only one is websocket (or [] to refuse upgrades)"
            ])
        #expect(
            problems(config(limits: ", max_tunnels: 0")).first?.contains(
                "limits.max_tunnels: must be a number from 1 to 1000000") == true)
        #expect(
            problems(config(limits: ", tunnel_idle_timeout: 10ms")).first?.contains(
                "limits.tunnel_idle_timeout: must be at least 100ms") == true)
        #expect(
            problems(config(route: "    close_at_token_expiry: true")).first?.contains(
                "routes[0].close_at_token_expiry: needs auth: bearer") == true)
    }
}
