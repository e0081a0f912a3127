import Testing

@testable import Gateway

/// A caller is its issuer's: rate limits count an identity key's value per issuer, and an
/// override names the issuer or belongs to the route's only one. check-config refuses a
/// `header:` key a client can forge at will, and warns where several issuers vouch.
@Suite("Rate limits: identities with their issuer")
struct RateLimitIssuerTests {
    static func yaml(_ policies: String, issuers: String = "[one, two]") -> String {
        """
        listen: 127.0.0.1:8080
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
          two: { issuer: "https://idp.two", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        rate_limits:
        \(policies)
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: \(issuers)
            rate_limit: per-user
        """
    }

    static let perUser = """
          per-user:
            key: sub
            rate: 10/s
            overrides: { "svc-batch": { rate: 100/s }, "two/bench-carol": { rate: 1/s }, "a/b": { rate: 2/s } }
        """

    func parse(_ yaml: String) throws -> GatewayConfig {
        try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get()
    }

    @Test func aBareOverrideIsTheOnlyIssuersAndAQualifiedOneKeepsItsIssuer() throws {
        let cfg = try parse(Self.yaml(Self.perUser, issuers: "[one]"))
        let policy = try #require(cfg.rateLimits["per-user"])
        let onOne = policy.onRoute(vouchers: ["one"], issuers: Set(cfg.issuers.keys))
        #expect(onOne.rule(for: "one\u{0}svc-batch").rate.count == 100)
        // A bare value with a slash of its own, not an issuer's name: still bare.
        #expect(onOne.rule(for: "one\u{0}a/b").rate.count == 2)
        // Another issuer's caller with the same sub gets the route's limit.
        #expect(onOne.rule(for: "two\u{0}svc-batch") == policy.limit)
        // "two/…" names issuer two, which does not vouch here.
        #expect(onOne.rule(for: "one\u{0}two/bench-carol") == policy.limit)
        #expect(onOne.rule(for: "two\u{0}bench-carol") == policy.limit)
    }

    @Test func onARouteOfSeveralIssuersOnlyQualifiedOverridesApply() throws {
        let cfg = try parse(Self.yaml(Self.perUser))
        let policy = try #require(cfg.rateLimits["per-user"])
        let both = policy.onRoute(vouchers: ["one", "two"], issuers: Set(cfg.issuers.keys))
        #expect(both.rule(for: "one\u{0}svc-batch") == policy.limit)
        #expect(both.rule(for: "two\u{0}svc-batch") == policy.limit)
        #expect(both.rule(for: "two\u{0}bench-carol").rate.count == 1)
        #expect(both.rule(for: "one\u{0}bench-carol") == policy.limit)
        let warnings = cfg.warnings.map(\.description)
        #expect(
            warnings.contains {
                $0.contains("counts each issuer's sub apart")
                    && $0.contains("its overrides a/b, svc-batch name no issuer")
            }, "\(warnings)")
    }

    /// Issuer `a`'s caller `b/x` and issuer `a/b`'s caller `x` are two callers.
    @Test func aSlashInANameOrAValueMeetsNoOtherCaller() {
        #expect(RateLimitPolicy.key("a", "b/x") != RateLimitPolicy.key("a/b", "x"))
        #expect(RateLimitPolicy.key("one", "svc-batch") == "one\u{0}svc-batch")
    }

    @Test func aKeyOfNoCallerIsNotQualified() throws {
        let cfg = try parse(
            Self.yaml(
                """
                  per-user:
                    key: ip
                    rate: 10/s
                    overrides: { "127.0.0.1": { rate: 100/s } }
                """))
        let policy = try #require(cfg.rateLimits["per-user"])
        #expect(
            policy.onRoute(vouchers: ["one", "two"], issuers: ["one", "two"]).rule(for: "127.0.0.1").rate.count == 100)
        #expect(!cfg.warnings.map(\.description).contains { $0.contains("rate_limit") })
    }

    @Test(arguments: [
        "X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Request-Id", "True-Client-IP", "X-Forwarded-User",
        "X-Forwarded-Host", "X-Envoy-External-Address"
    ])
    func aHeaderKeyOnAHeaderTokengateRewritesIsRefused(_ header: String) {
        let yaml = Self.yaml("  per-user: { key: \"header:\(header)\", rate: 10/s }", issuers: "[one]")
        guard case .failure(let e) = ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
        else {
            Issue.record("header:\(header) was accepted")
            return
        }
        #expect(
            e.problems.map(\.description).contains {
                $0.contains("rate_limits.per-user.key") && $0.contains("count by key: ip")
            }, "\(e.problems)")
    }

    @Test func aHeaderKeyTheClientOwnsIsAccepted() throws {
        let cfg = try parse(Self.yaml("  per-user: { key: \"header:X-Tenant\", rate: 10/s }", issuers: "[one]"))
        #expect(cfg.rateLimits["per-user"]?.key == .header("X-Tenant"))
    }

    @Test func anAuthorizeRouteOfSeveralIssuersIsWarned() throws {
        let yaml = Self.yaml(Self.perUser).replacingOccurrences(
            of: "    rate_limit: per-user", with: "    authorize: pdp"
        ).replacingOccurrences(
            of: "rate_limits:", with: "authorizers:\n  pdp: { url: \"http://127.0.0.1:9/\" }\nrate_limits:")
        let cfg = try parse(yaml)
        #expect(cfg.warnings.map(\.description).contains { $0.contains("subject.properties.iss") })
    }
}
