import Glibc
import Testing

@testable import Reactor

@Suite("LoopEvent: one owned libevent event for timers, signals, pipes and curl's sockets")
struct LoopEventTests {
    @Test func aTimerFiresOnceAtItsTimeoutAndReportsIt() throws {
        let loop = EventLoop()
        var fired: [SocketEvents] = []
        let timer = try #require(
            LoopEvent(base: loop.base, .timer, persist: false) { events in
                fired.append(events)
                loop.stop()
            })
        #expect(!timer.timeoutPending)
        #expect(timer.add(timeout: 0.02))
        #expect(timer.timeoutPending)
        loop.schedule(after: 2) { loop.stop() }
        loop.run()
        #expect(fired == [.timeout])
        #expect(!timer.timeoutPending, "a one-shot timer is idle after it fired")
    }

    @Test func aDeletedOrCancelledEventDoesNotFire() throws {
        let loop = EventLoop()
        var fired = 0
        let deleted = try #require(LoopEvent(base: loop.base, .timer, persist: false) { _ in fired += 1 })
        let cancelled = try #require(LoopEvent(base: loop.base, .timer, persist: false) { _ in fired += 1 })
        deleted.add(timeout: 0.01)
        cancelled.add(timeout: 0.01)
        deleted.delete()
        cancelled.cancel()
        cancelled.cancel()
        #expect(!cancelled.add(), "nothing to add after the cancel")
        loop.schedule(after: 0.1) { loop.stop() }
        loop.run()
        #expect(fired == 0)
    }

    @Test func aSocketEventReportsReadinessAndMayCancelItselfInItsCallback() throws {
        let loop = EventLoop()
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        var seen: [SocketEvents] = []
        var event: LoopEvent?
        event = LoopEvent(base: loop.base, .socket(fds[0], .readable), persist: true) { events in
            seen.append(events)
            // The owner drops its event mid-callback: it lives to the end of the call.
            event?.cancel()
            event = nil
            loop.stop()
        }
        #expect(event?.add() == true)
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        loop.schedule(after: 2) { loop.stop() }
        loop.run()
        #expect(seen == [.readable])
        #expect(event == nil)
    }
}
