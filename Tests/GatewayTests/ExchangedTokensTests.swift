import Foundation
import OAuth
import Reactor
import Testing

@testable import Gateway

/// The process's exchanges (`ExchangedTokens`): one leader per key, the others waiting and
/// answered on their own loops, an issued token or a refusal kept until its time, a failure
/// never, nothing kept across a new config. (Two workers and a real AS:
/// IntegrationTests/auth/test_token_exchange_workers.py.)
@Suite("Token exchange: one exchange per process")
struct ExchangedTokensTests {
    let loop = EventLoop()

    static func issued(_ token: String, until: Int64) throws -> TokenExchanger.Outcome {
        let body = Array(
            """
            {"access_token":"\(token)","issued_token_type":"urn:ietf:params:oauth:token-type:access_token",\
            "token_type":"Bearer","expires_in":300}
            """.utf8)
        let parsed = TokenExchange.parse(
            status: 200, body: body, target: TokenExchange.Target(audiences: ["orders"]), boundTo: nil, now: 1000)
        return .issued(TokenExchanger.Issued(try parsed.get(), until: until))
    }

    func role(_ c: ExchangedTokens, _ key: String, now: Int64 = 1000) -> String {
        switch c.join(key, loop: loop, now: now, done: { _, _ in }) {
        case .leader: "leader"
        case .waiting: "waiting"
        case .kept(.issued(let i), _): "kept \(i.token.token)"
        case .kept(.refused(let e), _): "kept refusal \(e)"
        case .kept(.unavailable, _): "kept unavailable"
        }
    }

    func lead(_ c: ExchangedTokens, _ key: String) throws -> ExchangedTokens.Lead {
        guard case .leader(let lead) = c.join(key, loop: loop, now: 1000, done: { _, _ in }) else {
            throw CancellationError()
        }
        return lead
    }

    @Test func oneLeaderTheOthersWaitThenTheTokenIsKeptUntilItsTime() throws {
        let c = ExchangedTokens()
        let lead = try lead(c, "k")
        #expect(role(c, "k") == "waiting")
        #expect(role(c, "other") == "leader")  // per key
        c.finish(lead, try Self.issued("t1", until: 1270), until: 1270, now: 1001)
        #expect(role(c, "k", now: 1269) == "kept t1")
        #expect(role(c, "k", now: 1270) == "leader")  // its time is over: asked again
        #expect(c.led == 3)
    }

    @Test func aRefusalIsKeptAFailureNever() throws {
        let c = ExchangedTokens()
        c.finish(try lead(c, "r"), .refused(error: "invalid_target"), until: 1010, now: 1000)
        #expect(role(c, "r", now: 1005) == "kept refusal invalid_target")
        c.finish(try lead(c, "u"), .unavailable("the AS hung"), until: 1010, now: 1000)
        #expect(role(c, "u") == "leader")
        // An issued token already past its time is handed to the waiters but not kept.
        c.finish(try lead(c, "late"), try Self.issued("t2", until: 999), until: 999, now: 1000)
        #expect(role(c, "late") == "leader")
    }

    /// A new config drops what was kept; an exchange under way when it came still answers its
    /// waiters, and keeps nothing.
    @Test func aNewConfigKeepsNothingFromTheOld() throws {
        let c = ExchangedTokens()
        c.finish(try lead(c, "a"), try Self.issued("t", until: 2000), until: 2000, now: 1000)
        let underWay = try lead(c, "b")
        c.clear()
        #expect(c.count == 0)
        #expect(role(c, "a") == "leader")
        c.finish(underWay, try Self.issued("old", until: 2000), until: 2000, now: 1000)
        #expect(role(c, "b") == "leader")
    }

    @Test func pastItsCapacityTheExpiredGoFirst() throws {
        let c = ExchangedTokens(capacity: 2)
        c.finish(try lead(c, "a"), try Self.issued("a", until: 1001), until: 1001, now: 1000)
        c.finish(try lead(c, "b"), try Self.issued("b", until: 5000), until: 5000, now: 1000)
        c.finish(try lead(c, "c"), try Self.issued("c", until: 5000), until: 5000, now: 1002)
        #expect(c.count == 2)
        #expect(role(c, "b", now: 1003) == "kept b" && role(c, "c", now: 1003) == "kept c")
    }

    /// A waiter of another worker is answered on its own loop's thread, not the leader's.
    @Test func aWaiterIsAnsweredOnItsOwnLoop() throws {
        let c = ExchangedTokens()
        let other = EventLoop()
        let ready = DispatchSemaphore(value: 0)
        let answered = DispatchSemaphore(value: 0)
        let thread = Thread {
            other.execute { ready.signal() }
            other.run()
        }
        thread.start()
        #expect(ready.wait(timeout: .now() + 5) == .success)
        let lead = try lead(c, "k")
        nonisolated(unsafe) var got: (token: String?, onItsLoop: Bool)?
        let role = c.join("k", loop: other, now: 1000) { outcome, until in
            if case .issued(let i) = outcome, until == 1300 { got = (i.token.token, Thread.current == thread) }
            answered.signal()
            other.stop()
        }
        guard case .waiting = role else {
            Issue.record("the second caller must wait")
            return
        }
        c.finish(lead, try Self.issued("shared", until: 1300), until: 1300, now: 1000)
        #expect(answered.wait(timeout: .now() + 5) == .success)
        #expect(got?.token == "shared" && got?.onItsLoop == true)
    }
}
