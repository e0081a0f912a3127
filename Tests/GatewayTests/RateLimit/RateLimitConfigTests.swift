import Testing

@testable import Gateway

/// `rate_limits:` and a route's `rate_limit`, and every problem check-config reports on them.
@Suite("Rate limits: the config")
struct RateLimitConfigTests {
    static func yaml(_ policies: String, route: String = "rate_limit: per-user", store: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        \(store)
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        rate_limits:
        \(policies)
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
            \(route)
        """
    }

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
    }

    func problems(_ yaml: String) -> [String] {
        if case .failure(let e) = parse(yaml) { return e.problems.map(\.description) }
        return []
    }

    @Test func aPolicyAndItsOverridesAreRead() throws {
        let cfg = try parse(
            Self.yaml(
                """
                  per-user:
                    key: claim:org.id
                    rate: 600/m
                    burst: 20
                    overrides: { "svc-batch": { rate: 100/s, burst: 50 } }
                    on_store_failure: fail_closed
                    headers: false
                """)
        ).get()
        let policy = try #require(cfg.rateLimits["per-user"])
        #expect(policy.key == .claim(["org", "id"]))
        #expect(policy.limit == RateLimitRule(rate: RateLimitRate(count: 600, seconds: 60), burst: 20))
        #expect(policy.overrides["svc-batch"] == RateLimitRule(rate: RateLimitRate(count: 100, seconds: 1), burst: 50))
        #expect(policy.onStoreFailure == .failClosed && !policy.headers)
        let listed = cfg.routes[0].options.settings[RateLimitStage.Settings.self]
        #expect(listed?.map(\.name) == ["per-user"])
    }

    @Test func burstDefaultsToThePerSecondRate() throws {
        let cfg = try parse(Self.yaml("  per-user: { rate: 10/s }")).get()
        #expect(cfg.rateLimits["per-user"]?.limit.burst == 10)
        #expect(cfg.rateLimits["per-user"]?.key == .subject)
        #expect(cfg.rateLimits["per-user"]?.headers == true)
    }

    @Test func checkConfigRefusesWhatCannotWork() {
        let cases: [(String, String, String)] = [
            ("  per-user: { key: user, rate: 1/s }", "rate_limit: per-user", "\"user\" is not sub, client_id"),
            ("  per-user: { rate: 10 }", "rate_limit: per-user", "\"10\" is not N/s, N/m, N/h or N/d"),
            ("  per-user: { rate: 0/s }", "rate_limit: per-user", "is not N/s"),
            ("  per-user: { key: sub }", "rate_limit: per-user", "rate: is required"),
            ("  per-user: { rate: 1/s, burst: 0 }", "rate_limit: per-user", "burst: must be a number from 1"),
            (
                "  per-user: { rate: 1/s, overrides: { svc: { burst: 5 } } }", "rate_limit: per-user",
                "overrides.svc.rate: is required"
            ),
            ("  per-user: { rate: 1/s, on_store_failure: maybe }", "rate_limit: per-user", "must be fail_open"),
            ("  per-user: { rate: 1/s }", "rate_limit: [per-user, nope]", "\"nope\" is not defined under rate_limits"),
            ("  per-tool: { key: tool, rate: 1/s }", "rate_limit: per-tool", "this route is not an MCP route"),
            ("  per-user: { rate: 1/s, window: 1s }", "rate_limit: per-user", "window: is not a known key")
        ]
        for (policies, route, expected) in cases {
            let found = problems(Self.yaml(policies, route: route))
            #expect(found.contains { $0.contains(expected) }, "\(expected) not in \(found)")
        }
    }

    @Test func withRedisTheDigestsNeedSharedSessionKeys() {
        let store = "store: redis://127.0.0.1:6379/0"
        let found = problems(Self.yaml("  per-user: { rate: 1/s }", store: store))
        #expect(found.contains { $0.contains("rate limits need session.keys") }, "\(found)")
        let keyed = store + "\nsession: { keys: [\"q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE=\"] }"
        #expect(problems(Self.yaml("  per-user: { rate: 1/s }", store: keyed)).isEmpty)
    }
}
