import Reactor
import Testing

@testable import Gateway

@Suite("Session refresh: one leader; a slow failure is remembered briefly, a quick one not")
struct RefreshCoordinatorTests {
    let loop = EventLoop()

    func role(_ c: RefreshCoordinator, _ id: String) -> String {
        switch c.join(id, loop: loop, done: { _ in }) {
        case .leader: "leader"
        case .waiting: "waiting"
        case .finished(.unchanged): "finished unchanged"
        case .finished: "finished"
        }
    }

    @Test func aQuickFailureIsNotRememberedTheNextRequestLeadsAgain() {
        let c = RefreshCoordinator()
        #expect(role(c, "s") == "leader")
        #expect(role(c, "s") == "waiting")
        c.finish("s", .unchanged, took: 0.05)  // refused, a 5xx: the AS answered at once
        #expect(role(c, "s") == "leader")
    }

    @Test func aFailureThatWaitedTheBoundIsRememberedForTheBackoff() {
        let c = RefreshCoordinator()
        #expect(role(c, "s") == "leader")
        c.finish("s", .unchanged, took: RefreshCoordinator.slowFailure + 8)  // the token endpoint hung
        #expect(role(c, "s") == "finished unchanged")
        #expect(role(c, "other") == "leader")  // per session
    }
}
