import Testing

@testable import Reactor

/// `execute` on the loop's own thread runs its work in the same turn, after the callbacks of
/// every event already ready: the Redis rate-limit store relies on it to send a turn's takes
/// together, with no request of that turn left behind.
@Suite("EventLoop: work executed from the loop's thread")
struct EventLoopTurnTests {
    @Test func runsAfterTheTurnsReadyCallbacks() {
        let loop = EventLoop()
        var order: [String] = []
        loop.schedule(after: 0) {
            // Two callbacks made ready in this turn.
            loop.execute {
                order.append("first")
                loop.execute {
                    order.append("executed")
                    loop.stop()
                }
            }
            loop.execute { order.append("second") }
        }
        loop.schedule(after: 5) { loop.stop() }
        loop.run()
        #expect(order == ["first", "second", "executed"])
    }
}
