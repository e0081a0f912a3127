import Foundation
import TestSupport
import Testing

@testable import Reactor

/// `UpstreamEndpoint.maxConnections` and the pool's bounded wait queue: a call at the cap
/// waits its turn (never a second connection), the queue refuses past `maxPending`, a wait
/// expires after `pendingTimeout`, and a waiter that leaves gives up its turn.
@Suite("UpstreamPool: connection cap and wait queue")
struct UpstreamPendingTests {
    /// A waiter that starts a call when its turn comes, or notes that the wait ran out.
    final class Waiter: UpstreamWaiter {
        var onRoom: () -> Void = {}
        var turns = 0
        var expired = false
        var expiredAt: Date?
        func upstreamRoom() {
            turns += 1
            onRoom()
        }
        func upstreamWaitExpired() {
            expired = true
            expiredAt = Date()
        }
    }

    func start(_ h: UpstreamHarness, _ target: String, _ recorder: UpstreamRecorder) {
        let call = UpstreamCall(
            pool: h.pool,
            request: UpstreamCall.Request(
                method: .GET, target: target, fields: HTTP1Fields([("Host", "upstream")]), body: nil),
            delegate: recorder)
        recorder.call = call
        call.start()
    }

    @Test func atTheCapACallWaitsForTheConnectionInUse() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest, .sleep(0.3), .send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")
            ]
        ])
        let h = UpstreamHarness(port: server.port, maxConnections: 1, maxPending: 1)
        let first = UpstreamRecorder()
        let second = UpstreamRecorder()
        let waiter = Waiter()
        var full = true
        var roomWhileBusy = true
        let done = h.run(limit: 5) { finish in
            self.start(h, "/1", first)
            roomWhileBusy = h.pool.hasRoom
            waiter.onRoom = { self.start(h, "/2", second) }
            #expect(h.pool.wait(waiter))
            // The queue holds one: the next is refused at once.
            full = !h.pool.wait(Waiter())
            second.onEnd = finish
        }
        #expect(done && !roomWhileBusy && full)
        #expect(first.bodyText == "one" && second.bodyText == "two")
        #expect(waiter.turns == 1 && !waiter.expired)
        // One connection the whole time: the waiter got the first call's, kept alive.
        #expect(server.accepted == 1)
        #expect(h.pool.openConnections == 1 && h.pool.inUse == 0 && h.pool.hasRoom)
    }

    @Test func aWaitExpiresAfterThePendingTimeout() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .sleep(1.5), .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]
        ])
        let h = UpstreamHarness(port: server.port, maxConnections: 1, maxPending: 4, pendingTimeout: 0.3)
        let first = UpstreamRecorder()
        let waiter = Waiter()
        let started = Date()
        h.run(limit: 5) { finish in
            self.start(h, "/", first)
            #expect(h.pool.wait(waiter))
            first.onEnd = finish
        }
        #expect(first.bodyText == "ok")
        #expect(waiter.expired && waiter.turns == 0)
        let waited = waiter.expiredAt.map { $0.timeIntervalSince(started) } ?? 0
        #expect(waited >= 0.25 && waited < 1.2)
        #expect(server.accepted == 1)
    }

    @Test func aWaiterThatLeavesGivesUpItsTurn() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest, .sleep(0.2), .send("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"),
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc")
            ]
        ])
        let h = UpstreamHarness(port: server.port, maxConnections: 1, maxPending: 2)
        let first = UpstreamRecorder()
        let third = UpstreamRecorder()
        let leaving = Waiter()
        let staying = Waiter()
        h.run(limit: 5) { finish in
            self.start(h, "/a", first)
            #expect(h.pool.wait(leaving) && h.pool.wait(staying))
            h.pool.stopWaiting(leaving)
            staying.onRoom = { self.start(h, "/c", third) }
            third.onEnd = finish
        }
        #expect(leaving.turns == 0 && !leaving.expired)
        #expect(staying.turns == 1 && third.bodyText == "c")
        #expect(server.accepted == 1)
    }
}
