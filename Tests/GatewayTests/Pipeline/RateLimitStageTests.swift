import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// The rate-limit stage in a route's chain: where each key kind counts, the 429 a caller
/// over its limit gets (and the upstream never sees), and the fields on allowed answers.
@Suite("Rate-limit stage: counted in the chain, refused with 429")
struct RateLimitStageTests {
    static let yaml = PipelineConfigs.yaml
        .replacingOccurrences(
            of: "routes:\n",
            with: """
                rate_limits:
                  per-ip: { key: ip, rate: 1/m, burst: 2 }
                  per-user: { key: sub, rate: 1/m, burst: 1, overrides: { batch: { rate: 1/m, burst: 3 } } }
                  quiet: { key: sub, rate: 1/m, burst: 5, headers: false }
                  per-tool: { key: tool, rate: 1/m, burst: 1 }
                routes:

                """
        )
        .replacingOccurrences(of: "  - name: public\n", with: "  - name: public\n    rate_limit: per-ip\n")
        .replacingOccurrences(
            of: "    cors_preflight: allow\n", with: "    cors_preflight: allow\n    rate_limit: [per-user, quiet]\n"
        )
        .replacingOccurrences(
            of: "    mcp: { default: allow }\n", with: "    mcp: { default: allow }\n    rate_limit: per-tool\n")

    /// Admitted as the token stage admits: the caller's `sub`, vouched for by `issuer`.
    static func admit(_ h: StageHarness, sub: String, issuer: String = "one") {
        h.request.admission = Admission(
            identity: [], session: false, body: nil, claims: JSONObject(["sub": .string(sub)]))
        h.request.context.authenticated(CallerIdentity(subject: sub, clientID: nil, issuer: issuer))
    }

    @Test func anIPLimitCountsBeforeAuthenticationAndAnIdentityLimitAfter() throws {
        let worker = try testWorker(Self.yaml)
        let open = try StageHarness(worker, "GET", "/public/x")
        #expect(open.chain.prefix(3) == ["UpgradeStage", "RateLimitStage", "PublicRouteStage"])
        let api = try StageHarness(worker, "GET", "/api/x")
        let auth = try #require(api.chain.firstIndex(of: "TokenStage"))
        #expect(api.chain[auth + 1] == "RateLimitStage")
        #expect(!api.chain.prefix(auth).contains("RateLimitStage"), "no identity limit before the token is checked")
        #expect(api.decisionChain.contains("RateLimitStage"), "decisions count too")
    }

    @Test func aCallerOverItsLimitGets429WithRetryAfterAndTheUpstreamNothing() throws {
        let worker = try testWorker(Self.yaml)
        var statuses: [Int?] = []
        var last: StageHarness?
        for _ in 0..<3 {
            let h = try StageHarness(worker, "GET", "/public/x")
            let outcome = h.run(try #require(h.stage(RateLimitStage.self)))
            statuses.append(outcome.proceeds ? nil : outcome.answerStatus)
            last = h
        }
        #expect(statuses == [nil, nil, 429], "burst 2, then refused")
        let h = try #require(last)
        #expect(h.transport.status == 429)
        #expect(h.json["error"] as? String == "rate_limited")
        #expect(h.json["request_id"] as? String == h.request.context.requestID)
        let retry = try #require(h.transport.head?.fields.first("Retry-After").flatMap { Int($0) })
        #expect(retry >= 1 && retry <= 60)
        #expect(h.transport.head?.fields.first("RateLimit") == "\"per-ip\";r=0;t=\(retry)")
        #expect(h.transport.head?.fields.first("RateLimit-Policy") == "\"per-ip\";q=1;w=60")
        #expect(worker.services.rateLimits.metrics.refused["public\u{0}per-ip"] == 1)
    }

    @Test func eachCallerHasItsOwnBudgetAndAnOverrideItsOwnRule() throws {
        let worker = try testWorker(Self.yaml)
        func attempt(_ sub: String, issuer: String = "one") throws -> StageOutcome {
            let h = try StageHarness(worker, "GET", "/api/x")
            Self.admit(h, sub: sub, issuer: issuer)
            return h.run(try #require(h.stage(RateLimitStage.self)))
        }
        #expect(try attempt("alice").proceeds)
        #expect(try attempt("alice").answerStatus == 429)
        #expect(try attempt("bob").proceeds, "Bob is not Alice")
        #expect(try (0..<3).allSatisfy { _ in try attempt("batch").proceeds }, "batch's burst is 3")
        #expect(try attempt("batch").answerStatus == 429)
        // Another issuer's `batch` and `alice` are other callers: a budget of their own, and
        // the route's limit, not the override written for this route's issuer's `batch`.
        #expect(try attempt("alice", issuer: "two").proceeds)
        #expect(try attempt("batch", issuer: "two").proceeds)
        #expect(try attempt("batch", issuer: "two").answerStatus == 429)
    }

    @Test func allowedAnswersCarryTheTightestPolicyWithHeaders() throws {
        let worker = try testWorker(Self.yaml)
        let h = try StageHarness(worker, "GET", "/api/x")
        Self.admit(h, sub: "carol")
        #expect(h.run(try #require(h.stage(RateLimitStage.self))).proceeds)
        // per-user has 0 left; quiet (headers: false) is never shown.
        let fields = h.request.context.response.added
        #expect(fields.first { $0.0 == "RateLimit" }?.1 == "\"per-user\";r=0;t=60")
        #expect(!fields.contains { $0.1.contains("quiet") })
    }

    @Test func theStoreNeverHoldsTheRawIdentity() throws {
        let worker = try testWorker(Self.yaml)
        let key = worker.services.rateLimits.storeKey(policy: "per-user", value: "alice@example.com")
        #expect(key.count == 22 && !key.contains("alice"))
        #expect(key != worker.services.rateLimits.storeKey(policy: "quiet", value: "alice@example.com"))
    }

    static func memo(subject: String) -> BearerMemo {
        BearerMemo(
            authorization: [], routeIndex: 0, generation: 0, validUntil: .max,
            caller: AuthenticatedCaller(
                token: VerifiedAccessToken(issuer: "one", claims: JSONObject(), expiresAt: 0, confirmation: nil)),
            identity: [], subject: subject, clientID: nil)
    }

    static func policy(_ worker: Worker, _ name: String) throws -> RateLimitPolicy {
        try #require(worker.services.config.rateLimits[name])
    }

    @Test func aConnectionsTokenKeepsItsPartitionsOnlyForItsOwnValueAndKeyGeneration() throws {
        let worker = try testWorker(Self.yaml)
        let limiter = worker.services.rateLimits
        let perUser = try Self.policy(worker, "per-user")
        let quiet = try Self.policy(worker, "quiet")
        let memo = Self.memo(subject: "alice")
        let alice = limiter.storeKey(policy: "per-user", value: "alice")
        #expect(limiter.partition(perUser, value: "alice", memo: memo).storeKey == alice)
        #expect(memo.kept[KnownStoreKeys.Key.self]?.keys.count == 1)
        #expect(limiter.partition(perUser, value: "alice", memo: memo).storeKey == alice, "found on the memo")
        // Another value or policy is never answered with the kept key.
        #expect(
            limiter.partition(perUser, value: "bob", memo: memo).storeKey
                == limiter.storeKey(policy: "per-user", value: "bob"))
        #expect(limiter.partition(quiet, value: "alice", memo: memo).storeKey != alice)
        // The override's rule is kept with its value.
        #expect(limiter.partition(perUser, value: "batch", memo: memo).rule.burst == 3)
        #expect(limiter.partition(perUser, value: "batch", memo: memo).rule.burst == 3, "found on the memo")
        // A new config's digest key: the kept keys no longer stand.
        limiter.apply(worker.services.config)
        #expect(limiter.knownPartition(perUser, memo: memo)?.storeKey == nil, "kept under the old digest key")
        let fresh = limiter.partition(perUser, value: "alice", memo: memo).storeKey
        #expect(fresh == limiter.storeKey(policy: "per-user", value: "alice"))
        #expect(memo.kept[KnownStoreKeys.Key.self]?.keys.allSatisfy { $0.generation == limiter.keyGeneration } == true)
    }

    /// A memo-admitted request whose key the token fixes counts where the memo's first
    /// request did, without its value built again; any other key is built every time.
    @Test func onlyAKeyTheTokenFixesIsTakenFromTheMemoWithoutItsValue() throws {
        let worker = try testWorker(Self.yaml)
        let perUser = try Self.policy(worker, "per-user")
        let memo = Self.memo(subject: "dave")
        func partition(_ policy: RateLimitPolicy, sub: String) throws -> RateLimitPartition {
            let h = try StageHarness(worker, "GET", "/api/x")
            h.request.admission = Admission(
                identity: [], session: false, body: nil, claims: JSONObject(["sub": .string(sub)]), bearerMemo: memo)
            h.request.context.authenticated(CallerIdentity(subject: sub, clientID: nil, issuer: "one"))
            return try #require(h.stage(RateLimitStage.self)).partition(policy, h.request)
        }
        let first = try partition(perUser, sub: "dave")
        #expect(first.value == RateLimitPolicy.key("one", "dave"[...]))
        #expect(worker.services.rateLimits.knownPartition(perUser, memo: memo)?.storeKey == first.storeKey)
        #expect(try partition(perUser, sub: "dave").storeKey == first.storeKey)
        for key in [RateLimitKey.subject, .clientID, .jkt, .claim(["org"])] { #expect(key.fixedByToken, "\(key)") }
        for key in [RateLimitKey.ip, .header("X-Tenant"), .certificate, .tool] { #expect(!key.fixedByToken, "\(key)") }
        // A policy whose key each request brings anew is read from the request, memo or not.
        var byHeader = perUser
        byHeader.key = .header("X-Tenant")
        let h = try StageHarness(worker, "GET", "/api/x", fields: [("Host", "app.example"), ("X-Tenant", "acme")])
        h.request.admission = Admission(identity: [], session: false, body: nil, claims: JSONObject(), bearerMemo: memo)
        let stage = try #require(h.stage(RateLimitStage.self))
        #expect(stage.partition(byHeader, h.request).value == "acme")
        let other = try StageHarness(worker, "GET", "/api/x", fields: [("Host", "app.example"), ("X-Tenant", "globex")])
        other.request.admission = h.request.admission
        #expect(stage.partition(byHeader, other.request).value == "globex", "not the memo's earlier value")
    }

    @Test func aToolLimitCountsAfterTheMCPStagePerToolAndCaller() throws {
        let worker = try testWorker(Self.yaml)
        let chain = try StageHarness(worker, "POST", "/mcp").chain
        let mcp = try #require(chain.firstIndex(of: "MCPStage"))
        #expect(chain[(mcp + 1)...].contains("RateLimitStage"), "\(chain)")
        func attempt(_ sub: String, tool: String?) throws -> StageOutcome {
            let h = try StageHarness(worker, "POST", "/mcp")
            Self.admit(h, sub: sub)
            if let tool {
                let call = MCPCallNote(method: "tools/call", named: tool)
                call.tool = tool
                h.request.context.state[MCPCallNote.Key.self] = call
            }
            return h.run(try #require(h.stage(RateLimitStage.self)))
        }
        #expect(try attempt("alice", tool: "deploy").proceeds)
        #expect(try attempt("alice", tool: "deploy").answerStatus == 429)
        #expect(try attempt("alice", tool: "echo").proceeds, "another tool")
        #expect(try attempt("bob", tool: "deploy").proceeds, "another caller")
    }
}
