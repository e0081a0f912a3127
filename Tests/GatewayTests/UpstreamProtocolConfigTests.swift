import Testing

@testable import Gateway

/// `upstreams.NAME.protocol`: which HTTP the gateway speaks to an upstream, and what
/// check-config refuses with it.
@Suite("Config: HTTP/2 upstreams")
struct UpstreamProtocolConfigTests {
    static func config(_ upstream: String, route: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        upstreams:
          app: \(upstream)
        routes:
          - match: { path_prefix: / }
            upstream: app
            auth: none
        \(route)
        """
    }

    static func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 2)
    }

    static func problems(_ yaml: String) -> [String] {
        if case .failure(let e) = parse(yaml) { return e.problems.map(\.description) }
        return []
    }

    @Test func http1ByDefaultAndH2cOnPlainURLs() throws {
        let plain = try Self.parse(Self.config("{ url: http://127.0.0.1:3000 }")).get()
        #expect(plain.upstreams["app"]?.http2 == false)
        #expect(plain.routes[0].options.upgrade.protocols == ["websocket"])
        let h2c = try Self.parse(Self.config("{ url: http://127.0.0.1:3000, protocol: h2c }")).get()
        #expect(h2c.upstreams["app"]?.endpoint.http2 == true)
        // HTTP/2 has no Upgrade (RFC 9113 §8.6): routes to it take no WebSocket by default.
        #expect(h2c.routes[0].options.upgrade.protocols.isEmpty)
        let http1 = try Self.parse(Self.config("{ url: http://127.0.0.1:3000, protocol: http1 }")).get()
        #expect(http1.upstreams["app"]?.http2 == false)
    }

    @Test func h2OverTLSOffersH2InALPN() throws {
        let cfg = try Self.parse(Self.config("{ url: https://127.0.0.1:3443, protocol: h2 }")).get()
        let app = try #require(cfg.upstreams["app"])
        #expect(app.http2 && app.endpoint.http2)
        #expect(app.tlsContext?.http2 == true)
    }

    @Test func refusals() {
        #expect(
            Self.problems(Self.config("{ url: http://127.0.0.1:3000, protocol: h2 }")).first?.contains(
                "h2 is HTTP/2 over TLS and needs an https:// url") == true)
        #expect(
            Self.problems(Self.config("{ url: https://127.0.0.1:3000, protocol: h2c }")).first?.contains(
                "h2c is HTTP/2 without TLS") == true)
        #expect(
            Self.problems(Self.config("{ url: http://127.0.0.1:3000, protocol: http2 }")).first?.contains(
                "must be http1, h2c or h2") == true)
        let upgrades = Self.problems(
            Self.config("{ url: http://127.0.0.1:3000, protocol: h2c }", route: "    upgrades: [websocket]"))
        #expect(upgrades.first?.contains("speaks HTTP/2, which has no Upgrade") == true)
    }
}
