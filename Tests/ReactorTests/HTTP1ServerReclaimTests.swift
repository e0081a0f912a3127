import Foundation
import Testing

@testable import Reactor

/// At `maxConnections` the server closes its oldest idle connection for a new client (as
/// nginx reuses connections when `worker_connections` run out), never one inside a request.
@Suite("HTTP/1.1 server: reclaiming idle connections at the limit", .serialized)
struct HTTP1ServerReclaimTests {
    static func options(max: Int) -> HTTPServerOptions {
        var options = HTTPServerOptions()
        options.maxConnections = max
        return options
    }

    /// A client the server has accepted (the accept order is the idle order of silent ones).
    static func accepted(_ harness: HTTP1ServerHarness, _ count: Int) throws -> TestClient {
        let client = try TestClient(port: harness.port)
        #expect(harness.wait { harness.server?.openConnections == count })
        return client
    }

    /// Still open: nothing and no end of stream within a short wait.
    static func stillOpen(_ client: TestClient) -> Bool {
        client.setTimeout(0.2)
        return !client.closedByPeer() && !client.sawEOF
    }

    @Test func silentConnectionsAreReclaimedOldestFirst() throws {
        let harness = try HTTP1ServerHarness(options: Self.options(max: 3)) { $0.responder.respond(status: 204) }
        defer { harness.stop() }
        let silent = try (1...3).map { try Self.accepted(harness, $0) }
        let started = Date()
        let fresh = try TestClient(port: harness.port)
        fresh.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(fresh.readResponse()?.status == 204)
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(silent[0].closedByPeer())
        #expect(Self.stillOpen(silent[1]) && Self.stillOpen(silent[2]))
        // The next newcomer takes the next oldest: the answered client is idle only since
        // its answer.
        let another = try TestClient(port: harness.port)
        another.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(another.readResponse()?.status == 204)
        #expect(silent[1].closedByPeer())
        #expect(Self.stillOpen(silent[2]) && Self.stillOpen(fresh))
        #expect(harness.onLoop { harness.server!.reclaimedConnections == 2 && harness.server!.openConnections == 3 })
        #expect(harness.onLoop { harness.server!.acceptPauses == 0 })
    }

    @Test func aRequestInFlightOrAHeadHalfSentIsNeverReclaimed() throws {
        let held = HeldResponders()
        let harness = try HTTP1ServerHarness(options: Self.options(max: 3)) { exchange in
            if exchange.head.target == "/slow" {
                held.responders.append(exchange.responder)
            } else {
                exchange.responder.respond(status: 204)
            }
        }
        defer { harness.stop() }
        let halfHead = try Self.accepted(harness, 1)
        halfHead.send("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        let waiting = try Self.accepted(harness, 2)
        waiting.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(harness.wait { held.responders.count == 1 })
        let keepAlive = try Self.accepted(harness, 3)
        keepAlive.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(keepAlive.readResponse()?.status == 204)
        #expect(harness.wait { harness.server!.idleConnections == 1 })

        // Only the keep-alive connection between requests is idle: it goes, the others stay.
        let first = try TestClient(port: harness.port)
        first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(first.readResponse()?.status == 204)
        #expect(keepAlive.closedByPeer())
        #expect(Self.stillOpen(halfHead) && Self.stillOpen(waiting))

        // Nothing idle but `first`, answered and idle now; then nothing at all: the next
        // client waits (accepting pauses) instead of cutting a request.
        let second = try TestClient(port: harness.port)
        second.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(harness.wait { held.responders.count == 2 })
        #expect(first.closedByPeer())
        let third = try TestClient(port: harness.port, timeout: 0.3)
        third.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(third.readResponse() == nil && !third.sawEOF)
        #expect(harness.onLoop { harness.server!.acceptPauses == 1 && harness.server!.openConnections == 3 })

        // The slow answer comes: that connection is idle between requests, so the waiting
        // client gets its slot at once (not when a timeout frees one).
        harness.onLoop { held.responders[0].respond(status: 200) }
        #expect(waiting.readResponse()?.status == 200)
        third.setTimeout(2)
        #expect(third.readResponse()?.status == 204)
        #expect(waiting.closedByPeer())
        #expect(Self.stillOpen(halfHead))
        harness.onLoop { held.responders[1].respond(status: 200) }
        #expect(second.readResponse()?.status == 200)
        #expect(harness.onLoop { harness.server!.reclaimedConnections == 3 && harness.server!.openConnections <= 3 })
    }

    /// Two servers on two loops (two workers) share one budget: a server with nothing idle
    /// of its own gets a slot reclaimed by the other.
    @Test func aSharedBudgetReclaimsOnTheOtherWorker() throws {
        let budget = ConnectionBudget(limit: 2)
        let one = try HTTP1ServerHarness(options: Self.options(max: 2), budget: budget) {
            $0.responder.respond(status: 204)
        }
        defer { one.stop() }
        let two = try HTTP1ServerHarness(options: Self.options(max: 2), budget: budget) {
            $0.responder.respond(status: 204)
        }
        defer { two.stop() }
        let silent = try (1...2).map { try Self.accepted(one, $0) }
        #expect(budget.count == 2)
        let started = Date()
        let fresh = try TestClient(port: two.port)
        fresh.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(fresh.readResponse()?.status == 204)
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(silent[0].closedByPeer())
        #expect(Self.stillOpen(silent[1]))
        #expect(one.onLoop { one.server!.reclaimedConnections == 1 && one.server!.openConnections == 1 })
        #expect(two.onLoop { two.server!.openConnections == 1 })
        #expect(budget.count == 2)
    }

    final class HeldResponders: @unchecked Sendable {
        var responders: [Responder] = []
    }
}
