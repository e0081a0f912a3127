import Foundation
import Synchronization
import Testing

@testable import Reactor

/// A loop's base runs without libevent's lock, so work from other threads reaches it only
/// through its mailbox: these check that such work runs, on the loop's thread, in order, and
/// that `stop()` from another thread ends the loop. Under ThreadSanitizer a call into the
/// base from the wrong thread would show as a race.
@Suite("EventLoop: work from other threads")
struct EventLoopMailboxTests {
    /// What the loop's thread records; read once the loop has stopped.
    final class Record: @unchecked Sendable {
        var order: [Int] = []
        /// The threads the work ran on (`pthread_self`).
        var threads: Set<UInt> = []
    }

    /// Starts `loop` on its own thread; the semaphore is signalled when `run()` returns.
    static func start(_ loop: EventLoop) -> DispatchSemaphore {
        let stopped = DispatchSemaphore(value: 0)
        let thread = Thread {
            loop.run()
            stopped.signal()
        }
        thread.start()
        return stopped
    }

    static var me: UInt { UInt(pthread_self()) }

    @Test func workFromOtherThreadsRunsOnTheLoopInOrder() {
        let loop = EventLoop()
        let record = Record()
        let done = DispatchSemaphore(value: 0)
        let stopped = Self.start(loop)
        let count = 200
        // Several senders, each in its own order; every letter must arrive.
        let senders = 4
        let sent = DispatchGroup()
        for sender in 0..<senders {
            DispatchQueue.global().async(group: sent) {
                for i in 0..<count {
                    loop.execute {
                        record.order.append(sender * count + i)
                        record.threads.insert(Self.me)
                        if record.order.count == senders * count { done.signal() }
                    }
                }
            }
        }
        sent.wait()
        #expect(done.wait(timeout: .now() + 10) == .success)
        loop.stop()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(record.order.count == senders * count)
        // One thread ran them all, and not this one.
        #expect(record.threads.count == 1 && !record.threads.contains(Self.me))
        // Each sender's letters keep their order.
        for sender in 0..<senders {
            let mine = record.order.filter { $0 / count == sender }
            #expect(mine == Array(sender * count..<(sender + 1) * count))
        }
    }

    @Test func workPostedBeforeTheLoopRunsWaitsForIt() {
        let loop = EventLoop()
        let record = Record()
        let ran = DispatchSemaphore(value: 0)
        loop.execute {
            record.order.append(1)
            ran.signal()
        }
        loop.schedule(after: 0.05) {
            record.order.append(2)
            ran.signal()
        }
        // Nothing runs the loop yet: nothing may have run.
        #expect(ran.wait(timeout: .now() + 0.1) == .timedOut)
        let stopped = Self.start(loop)
        #expect(ran.wait(timeout: .now() + 10) == .success)
        #expect(ran.wait(timeout: .now() + 10) == .success)
        loop.stop()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(record.order == [1, 2])
    }

    @Test func stopFromAnotherThreadEndsTheLoopWithNothingElseToDo() {
        let loop = EventLoop()
        let stopped = Self.start(loop)
        // The mailbox's event keeps an otherwise empty loop running until it is stopped.
        #expect(stopped.wait(timeout: .now() + 0.2) == .timedOut)
        loop.stop()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }

    @Test func workScheduledOnTheLoopItselfRunsThere() {
        let loop = EventLoop()
        let record = Record()
        let done = DispatchSemaphore(value: 0)
        let stopped = Self.start(loop)
        loop.execute {
            record.threads.insert(Self.me)
            // On the loop's own thread: straight to libevent, no mailbox.
            loop.schedule(after: 0.01) {
                record.threads.insert(Self.me)
                // And stop() from the loop's own thread.
                loop.stop()
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        // Both ran on the loop's thread (the same one), not this one.
        #expect(record.threads.count == 1 && !record.threads.contains(Self.me))
    }
}
