import Foundation
import Reactor
import Testing

@testable import Gateway

/// The process's client-credentials tokens (`ProcessGrantTokens`): one request per grant at a
/// time, the others waiting; a token held until its time and shared, a failure never held; a
/// token one worker saw refused, or a new config, ends every worker's copy. (Two workers and a
/// real AS: IntegrationTests/auth/test_upstream_credentials.py.)
@Suite("Client credentials: one token per process")
struct ProcessGrantTokensTests {
    let loop = EventLoop()

    func role(_ t: ProcessGrantTokens, _ key: String, now: Double = 100) -> String {
        switch t.join(key, loop: loop, now: now, done: { _, _ in }) {
        case .leader: "leader"
        case .waiting: "waiting"
        case .held(let token, _): "held \(token)"
        }
    }

    func lead(_ t: ProcessGrantTokens, _ key: String) throws -> ProcessGrantTokens.Lead {
        guard case .leader(let lead) = t.join(key, loop: loop, now: 100, done: { _, _ in }) else {
            throw CancellationError()
        }
        return lead
    }

    @Test func oneLeaderTheOthersWaitThenTheTokenIsHeldUntilItsTime() throws {
        let t = ProcessGrantTokens()
        let lead = try lead(t, "g")
        #expect(role(t, "g") == "waiting")
        #expect(role(t, "other") == "leader")
        t.finish(lead, .success("tok"), until: 130)
        #expect(role(t, "g", now: 129) == "held tok")
        #expect(t.holds("g", token: "tok"))
        #expect(role(t, "g", now: 130) == "leader")
        #expect(t.led == 3)
    }

    @Test func aFailureIsNeverHeld() throws {
        let t = ProcessGrantTokens()
        t.finish(try lead(t, "g"), .failure(ClientCredentialsError("the AS is down")), until: 500)
        #expect(role(t, "g") == "leader")
    }

    @Test func aDroppedTokenOrANewConfigEndsEveryCopy() throws {
        let t = ProcessGrantTokens()
        t.finish(try lead(t, "g"), .success("tok"), until: 500)
        t.drop("g", token: "another")
        #expect(t.holds("g", token: "tok"))
        t.drop("g", token: "tok")
        #expect(!t.holds("g", token: "tok") && role(t, "g") == "leader")
        let underWay = try lead(t, "h")
        t.clear()
        t.finish(underWay, .success("old"), until: 500)
        #expect(!t.holds("h", token: "old") && role(t, "h") == "leader")
    }

    /// A waiter of another worker is answered on its own loop's thread, with the time to hold it.
    @Test func aWaiterIsAnsweredOnItsOwnLoop() throws {
        let t = ProcessGrantTokens()
        let other = EventLoop()
        let ready = DispatchSemaphore(value: 0)
        let answered = DispatchSemaphore(value: 0)
        let thread = Thread {
            other.execute { ready.signal() }
            other.run()
        }
        thread.start()
        #expect(ready.wait(timeout: .now() + 5) == .success)
        let lead = try lead(t, "g")
        nonisolated(unsafe) var got: (token: String?, until: Double, onItsLoop: Bool)?
        let role = t.join("g", loop: other, now: 100) { outcome, until in
            got = (try? outcome.get(), until, Thread.current == thread)
            answered.signal()
            other.stop()
        }
        guard case .waiting = role else {
            Issue.record("the second caller must wait")
            return
        }
        t.finish(lead, .success("shared"), until: 160)
        #expect(answered.wait(timeout: .now() + 5) == .success)
        #expect(got?.token == "shared" && got?.until == 160 && got?.onItsLoop == true)
    }
}
