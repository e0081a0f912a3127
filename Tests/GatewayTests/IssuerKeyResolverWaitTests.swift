import JOSE
import Testing

@testable import Gateway

/// The bounded wait on an unknown `kid`, without a loop: timers and the main loop's refetch
/// are fakes the test fires by hand, so no assertion depends on time passing.
@Suite("IssuerKeyResolver: one shared refetch, a bounded wait")
struct IssuerKeyResolverWaitTests {
    /// Timers started by the resolver; the test fires them.
    final class Timers {
        var started: [(seconds: Double, fire: () -> Void)] = []
        var cancelled: Set<Int> = []
        var start: IssuerKeyResolver.StartTimer {
            { [unowned self] seconds, fire in
                let index = self.started.count
                self.started.append((seconds, fire))
                return { [unowned self] in self.cancelled.insert(index) }
            }
        }
        /// Fires every timer not cancelled, as their time passing would.
        func fireAll() {
            for (i, t) in started.enumerated() where !cancelled.contains(i) { t.fire() }
        }
    }

    /// A resolver whose refetches are held until the test answers them.
    final class Harness {
        let timers = Timers()
        let resolver: IssuerKeyResolver
        var asked: [String] = []
        var answers: [(JWKSet?) -> Void] = []
        /// What a verification finds: the key is there once `keyArrived` is set.
        var keyArrived = false
        var outcomes: [String] = []

        init() {
            resolver = IssuerKeyResolver(startTimer: timers.start)
            resolver.requestRefetch = { [unowned self] issuer, done in
                self.asked.append(issuer)
                self.answers.append(done)
            }
        }

        /// One request with an unknown kid of `issuer`.
        func request(_ issuer: String = "as") {
            resolver.verify(
                { [unowned self] in self.keyArrived ? "valid" : "unknown kid" },
                unknownKey: { $0 == "unknown kid" ? issuer : nil },
                done: { [unowned self] in self.outcomes.append($0) })
        }
    }

    @Test func concurrentMissesShareOneRefetchAndAllPassWhenItAnswers() {
        let h = Harness()
        for _ in 0..<50 { h.request() }
        #expect(h.asked == ["as"])
        #expect(h.outcomes.isEmpty && h.resolver.waiters(of: "as") == 50)
        h.keyArrived = true
        h.answers[0](JWKSet(keys: []))
        #expect(h.outcomes == Array(repeating: "valid", count: 50))
        // Every timer was cancelled: none can answer a second time.
        #expect(h.timers.cancelled.count == 50)
        h.timers.fireAll()
        #expect(h.outcomes.count == 50)
    }

    @Test func pastTheBoundTheRequestIsAnsweredAndTheFetchGoesOn() {
        let h = Harness()
        h.request()
        #expect(h.timers.started.map(\.seconds) == [IssuerKeyResolver.defaultRefetchWait])
        h.timers.fireAll()
        #expect(h.outcomes == ["unknown kid"])
        #expect(h.resolver.waiters(of: "as") == 0)
        // A request during the same refetch waits on it, without asking again.
        h.request()
        #expect(h.asked == ["as"] && h.resolver.waiters(of: "as") == 1)
        // The late answer: only the request still waiting gets a verdict, exactly one.
        h.keyArrived = true
        h.answers[0](JWKSet(keys: []))
        #expect(h.outcomes == ["unknown kid", "valid"])
        #expect(h.resolver[issuer: "as"] != nil)
    }

    @Test func aRefetchThatChangedNothingGivesTheFirstVerdict() {
        let h = Harness()
        h.request()
        h.request()
        h.answers[0](nil)
        #expect(h.outcomes == ["unknown kid", "unknown kid"])
        // The next miss asks the main loop again; its allowance decides whether to fetch.
        h.request()
        #expect(h.asked == ["as", "as"])
    }

    @Test func eachIssuerHasItsOwnRefetchAndBound() {
        let h = Harness()
        h.resolver.refetchWait = ["slow": 3]
        h.request("as")
        h.request("slow")
        h.request("as")
        #expect(h.asked == ["as", "slow"])
        #expect(h.timers.started.map(\.seconds) == [1, 3, 1])
        h.answers[1](nil)
        #expect(h.outcomes == ["unknown kid"] && h.resolver.waiters(of: "as") == 2)
    }

    @Test func aZeroWaitAnswersAtOnceAndStillRefetches() {
        let h = Harness()
        h.resolver.refetchWait = ["as": 0]
        h.request()
        h.request()
        #expect(h.outcomes == ["unknown kid", "unknown kid"])
        #expect(h.asked == ["as"] && h.timers.started.isEmpty)
        h.keyArrived = true
        h.answers[0](JWKSet(keys: []))
        h.request()
        #expect(h.outcomes.last == "valid")
    }

    @Test func aKnownKeyNeverWaits() {
        let h = Harness()
        h.keyArrived = true
        h.request()
        #expect(h.outcomes == ["valid"] && h.asked.isEmpty && h.timers.started.isEmpty)
    }
}
