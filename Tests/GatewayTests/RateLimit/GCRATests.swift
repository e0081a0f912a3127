import Synchronization
import Testing

@testable import Gateway

/// The algorithm on a clock the test moves (microseconds): bursts, the steady rate, and the
/// state a key keeps.
@Suite("Rate limits: GCRA, its memory store and its fields")
struct GCRATests {
    static let second: Int64 = 1_000_000
    let cell = GCRA(rate: RateLimitRate(count: 10, seconds: 1), burst: 5)

    /// Takes `n` requests at `now`, carrying the state; returns the decisions.
    func take(_ n: Int, at now: Int64, _ tat: inout Int64?) -> [GCRA.Decision] {
        (0..<n).map { _ in
            let (d, next) = cell.take(tat: tat, now: now)
            if let next { tat = next }
            return d
        }
    }

    @Test func aBurstPassesAtOnceAndTheNextWaitsOneInterval() {
        var tat: Int64? = nil
        let decisions = take(6, at: 0, &tat)
        #expect(decisions.prefix(5).allSatisfy { $0.allowed })
        #expect(decisions.prefix(5).map(\.remaining) == [4, 3, 2, 1, 0])
        #expect(!decisions[5].allowed)
        #expect(decisions[5].retryAfter == Self.second / 10, "one emission interval")
        #expect(decisions[5].reset == Self.second / 2, "five intervals until the budget is whole")
    }

    @Test func aRefusedRequestSpendsNothing() {
        var tat: Int64? = nil
        _ = take(5, at: 0, &tat)
        let before = tat
        _ = take(20, at: 0, &tat)
        #expect(tat == before)
        #expect(take(1, at: Self.second / 10, &tat).first?.allowed == true, "one interval later, one more")
    }

    @Test func theSteadyRateIsKeptWithNoEdgeBursts() {
        // 10/s with burst 5: over 3 s, the burst plus 30 pass, whatever the spacing.
        var tat: Int64? = nil
        var allowed = 0
        for ms in stride(from: Int64(0), to: 3000, by: 7) {
            allowed += take(1, at: ms * 1000, &tat).filter { $0.allowed }.count
        }
        #expect(allowed >= 34 && allowed <= 35, "\(allowed)")
    }

    @Test func aKeysStateEndsWhenItsBudgetIsWholeAgain() {
        var tat: Int64? = nil
        _ = take(3, at: 0, &tat)
        #expect(tat == 3 * Self.second / 10)
        // After the TAT, no state is the same as the state: a full budget.
        let late = 2 * Self.second
        #expect(cell.take(tat: tat, now: late).0 == cell.take(tat: nil, now: late).0)
    }

    @Test func ratesPerMinuteHourAndDaySpaceRequestsEvenly() {
        #expect(GCRA(rate: RateLimitRate("60/m")!, burst: 1).interval == Self.second)
        #expect(GCRA(rate: RateLimitRate("2/h")!, burst: 1).interval == 1800 * Self.second)
        #expect(GCRA(rate: RateLimitRate("1/d")!, burst: 1).interval == 86400 * Self.second)
        #expect(RateLimitRate("3/s")?.text == "3/s")
        for bad in ["0/s", "-1/s", "10", "10/x", "/s", "ten/s", "10/s/s", ""] {
            #expect(RateLimitRate(bad) == nil, "\(bad)")
        }
        #expect(RateLimitRule.defaultBurst(RateLimitRate("10/s")!) == 10)
        #expect(RateLimitRule.defaultBurst(RateLimitRate("30/m")!) == 1)
    }

    @Test func overridesApplyByTheKeysValue() {
        var policy = RateLimitPolicy(name: "p", limit: RateLimitRule(rate: RateLimitRate("1/s")!, burst: 1))
        policy.overrides["svc-batch"] = RateLimitRule(rate: RateLimitRate("100/s")!, burst: 50)
        #expect(policy.rule(for: "svc-batch").burst == 50)
        #expect(policy.rule(for: "alice").burst == 1)
    }

    @Test func keyKindsParseAsWritten() {
        #expect(RateLimitKey("claim:org.id") == .claim(["org", "id"]))
        #expect(RateLimitKey("header:X-Tenant") == .header("X-Tenant"))
        for bad in ["claim:", "claim:a..b", "header:", "header:a b", "user", "SUB"] {
            #expect(RateLimitKey(bad) == nil, "\(bad)")
        }
        #expect(RateLimitKey.ip.position == .beforeAuthentication)
        #expect(RateLimitKey.subject.position == .afterAuthentication)
        #expect(RateLimitKey.tool.position == .beforeUpstream)
    }

    @Test func theMemoryStoreSharesOneBudgetAndDropsWholeKeys() throws {
        let now = Mutex<Int64>(0)
        let store = MemoryRateLimits(capacity: 1_000_000, clock: { now.withLock { $0 } })
        let cell = GCRA(rate: RateLimitRate("1/s")!, burst: 1)
        #expect(try store.takeNow("a", cell).get().allowed)
        #expect(try !store.takeNow("a", cell).get().allowed)
        #expect(try store.takeNow("b", cell).get().allowed, "another key, another budget")
        #expect(store.liveKeys == 2)
        now.withLock { $0 = 2 * Self.second }
        #expect(store.liveKeys == 0, "both budgets whole again: no state kept")
        #expect(try store.takeNow("a", cell).get().allowed)
    }

    @Test func aFullMemoryStoreIsAStoreFailure() {
        let now = Mutex<Int64>(0)
        let store = MemoryRateLimits(capacity: 1024, clock: { now.withLock { $0 } })
        let cell = GCRA(rate: RateLimitRate("1/h")!, burst: 1)
        var failed = 0
        for i in 0..<1100 { if case .failure = store.takeNow("k\(i)", cell) { failed += 1 } }
        #expect(failed > 0, "past capacity live keys, the policy's on_store_failure decides")
    }

    @Test func theFieldsAreStructuredFieldListsWithTheNameOnly() {
        let policy = RateLimitPolicy(name: "per-user", limit: RateLimitRule(rate: RateLimitRate("10/s")!, burst: 5))
        let allowed = GCRA.Decision(allowed: true, remaining: 3, retryAfter: 0, reset: 400_000)
        let fields = RateLimitFields.fields(policy, rule: policy.limit, allowed)
        #expect(fields.first { $0.0 == "RateLimit-Policy" }?.1 == "\"per-user\";q=10;w=1")
        #expect(fields.first { $0.0 == "RateLimit" }?.1 == "\"per-user\";r=3;t=1")
        let refused = GCRA.Decision(allowed: false, remaining: 0, retryAfter: 2_500_000, reset: 3_000_000)
        #expect(RateLimitFields.retryAfter(refused) == 3)
        #expect(
            RateLimitFields.fields(policy, rule: policy.limit, refused).first { $0.0 == "RateLimit" }?.1
                == "\"per-user\";r=0;t=3", "t names the moment Retry-After names")
        #expect(RateLimitFields.retryAfter(.init(allowed: false, remaining: 0, retryAfter: 10, reset: 10)) == 1)
    }

    /// `RateLimit` is written by hand into its string: it must be what the package's serializer
    /// writes for the same item, for every number a decision can hold.
    @Test(arguments: [0, 1, 9, 10, 99, 1000, 86_400, 999_999_999_999_999, Int.max, -1, Int.min])
    func theRateLimitFieldIsWhatTheSerializerWrites(_ n: Int) {
        for name in ["per-user", "a", "svc.batch_2"] {
            let item = RateLimitFields.list(name, [])
            #expect(
                RateLimitFields.rateLimitField(item, remaining: n, reset: 7)
                    == RateLimitFields.list(name, [("r", n), ("t", 7)]) || n < -999_999_999_999_999
                    || n > 999_999_999_999_999)
            #expect(RateLimitFields.rateLimitField(item, remaining: 3, reset: n) == "\(item);r=3;t=\(n)")
        }
    }
}
