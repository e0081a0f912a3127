import Foundation
import Testing

@testable import Reactor

@Suite("BodySpool: message bytes on disk, in order, within the caps")
struct BodySpoolTests {
    func bytes(_ n: Int, from start: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: start + $0) } }

    func drain(_ spool: BodySpool, max: Int) -> [UInt8] {
        var out: [UInt8] = []
        while let chunk = spool.next(max: max) { out += chunk.take() }
        return out
    }

    @Test func bytesComeBackInOrderAcrossReads() throws {
        let budget = SpoolBudget(limit: 1 << 20)
        let spool = try #require(BodySpool(directory: NSTemporaryDirectory(), budget: budget, maxBytes: 1 << 20))
        #expect(spool.append(ByteQueue(bytes(5000, from: 0)).chunk) == .stored)
        #expect(spool.pending == 5000)
        #expect(spool.next(max: 1000)?.take() == bytes(1000, from: 0))
        #expect(spool.append(ByteQueue(bytes(3000, from: 5000)).chunk) == .stored)
        #expect(drain(spool, max: 777) == bytes(7000, from: 1000))
        #expect(spool.pending == 0)
        // Read back whole: the file starts over, its disk given back, and the order holds.
        #expect(budget.inUse == 0)
        #expect(spool.append(ByteQueue(bytes(3000, from: 9)).chunk) == .stored)
        #expect(budget.inUse == 3000)
        #expect(drain(spool, max: 1024) == bytes(3000, from: 9))
    }

    @Test func pastTheAnswersCapAChunkWaitsInMemoryAfterTheFile() throws {
        let budget = SpoolBudget(limit: 1 << 20)
        let spool = try #require(BodySpool(directory: NSTemporaryDirectory(), budget: budget, maxBytes: 4096))
        #expect(spool.append(ByteQueue(bytes(4000, from: 0)).chunk) == .stored)
        #expect(spool.append(ByteQueue(bytes(200, from: 4000)).chunk) == .full)
        // Once one chunk waits in memory every later one does too, so the order holds.
        #expect(spool.append(ByteQueue(bytes(10, from: 4200)).chunk) == .full)
        #expect(drain(spool, max: 1500) == bytes(4210, from: 0))
        #expect(budget.inUse == 0)
        // The cap bounds what waits: once the client took it all, the file is used again.
        #expect(spool.append(ByteQueue(bytes(4000, from: 1)).chunk) == .stored)
        #expect(budget.inUse == 4000)
        #expect(drain(spool, max: 4096) == bytes(4000, from: 1))
    }

    @Test func theProcessBudgetIsSharedAndGivenBack() throws {
        let budget = SpoolBudget(limit: 6000)
        let first = try #require(BodySpool(directory: NSTemporaryDirectory(), budget: budget, maxBytes: 1 << 20))
        var second = BodySpool(directory: NSTemporaryDirectory(), budget: budget, maxBytes: 1 << 20)
        #expect(first.append(ByteQueue(bytes(4000, from: 0)).chunk) == .stored)
        #expect(second?.append(ByteQueue(bytes(4000, from: 0)).chunk) == .full)
        #expect(second?.append(ByteQueue(bytes(1, from: 0)).chunk) == .full)
        #expect(budget.inUse == 4000)
        second = nil
        #expect(budget.spools == 2)
        _ = drain(first, max: 4096)
        #expect(budget.inUse == 0)
    }

    /// `request_spool_per_client`: one source's spools together hold at most its share; other
    /// sources still have the rest of the total, and what a source gives back is its again.
    @Test func aSourceHoldsAtMostItsShare() throws {
        let budget = SpoolBudget(limit: 10_000, perSource: 5000)
        let dir = NSTemporaryDirectory()
        let a1 = try #require(BodySpool(directory: dir, budget: budget, maxBytes: 1 << 20, source: "203.0.113.7"))
        var a2 = BodySpool(directory: dir, budget: budget, maxBytes: 1 << 20, source: "203.0.113.7")
        let b = try #require(BodySpool(directory: dir, budget: budget, maxBytes: 1 << 20, source: "203.0.113.8"))
        #expect(a1.append(ByteQueue(bytes(4000, from: 0)).chunk) == .stored)
        #expect(budget.hasRoom(1000, for: "203.0.113.7") && !budget.hasRoom(1001, for: "203.0.113.7"))
        #expect(a2?.append(ByteQueue(bytes(1500, from: 0)).chunk) == .full)
        #expect(b.append(ByteQueue(bytes(5000, from: 0)).chunk) == .stored)
        #expect(budget.inUse == 9000)
        // The total binds too: another source finds only what is left of it.
        #expect(budget.hasRoom(1000, for: "198.51.100.1") && !budget.hasRoom(1001, for: "198.51.100.1"))
        a2 = nil
        _ = drain(a1, max: 4096)
        #expect(budget.inUse == 5000)
        #expect(budget.hasRoom(5000, for: "203.0.113.7"))
    }

    @Test func withoutAShareASourceIsBoundByTheTotalAlone() throws {
        let budget = SpoolBudget(limit: 6000)
        #expect(budget.perSource == 6000)
        let spool = try #require(
            BodySpool(directory: NSTemporaryDirectory(), budget: budget, maxBytes: 1 << 20, source: "203.0.113.7"))
        #expect(spool.append(ByteQueue(bytes(6000, from: 0)).chunk) == .stored)
        #expect(!budget.hasRoom(1, for: "203.0.113.7"))
    }

    @Test func noDirectoryNoSpool() {
        let budget = SpoolBudget(limit: 1 << 20)
        #expect(BodySpool(directory: "/nonexistent/dir", budget: budget, maxBytes: 1 << 20) == nil)
    }
}
