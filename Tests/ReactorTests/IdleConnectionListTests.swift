import Dispatch
import Testing

@testable import Reactor

/// The idle list a server reclaims from at the connection limit, and the process-wide
/// budget it counts against, without sockets.
@Suite("Connection limit: idle list and budget")
struct IdleConnectionListTests {
    final class Node: IdleListNode {
        let name: String
        var idleLinks = IdleLinks<Node>()
        init(_ name: String) { self.name = name }
    }

    /// Names from the oldest idle on, emptying the list.
    static func drain(_ list: IdleConnectionList<Node>) -> [String] {
        var names: [String] = []
        while let node = list.popOldest() { names.append(node.name) }
        return names
    }

    @Test func reclaimsInTheOrderConnectionsWentIdle() {
        let list = IdleConnectionList<Node>()
        let nodes = ["a", "b", "c", "d"].map(Node.init)
        for node in nodes { list.append(node) }
        #expect(list.count == 4 && list.oldest === nodes[0])
        #expect(Self.drain(list) == ["a", "b", "c", "d"])
        #expect(list.isEmpty && list.oldest == nil)
        #expect(nodes.allSatisfy { !$0.idleLinks.isLinked })
    }

    @Test func busyConnectionsLeaveAndRejoinAtTheNewerEnd() {
        let list = IdleConnectionList<Node>()
        let (a, b, c) = (Node("a"), Node("b"), Node("c"))
        for node in [a, b, c] { list.append(node) }
        // b receives a request head: busy; then answered, idle again: now the newest.
        list.set(b, idle: false)
        #expect(list.count == 2 && !b.idleLinks.isLinked)
        list.set(b, idle: true)
        // a receives a byte: the oldest leaves; c is now the oldest.
        list.set(a, idle: false)
        #expect(Self.drain(list) == ["c", "b"])
    }

    @Test func stayingIdleKeepsTheFirstPlace() {
        let list = IdleConnectionList<Node>()
        let (a, b) = (Node("a"), Node("b"))
        list.append(a)
        list.append(b)
        // Told again that it is idle (every event re-checks): its idle time does not restart.
        list.set(a, idle: true)
        list.append(a)
        #expect(list.count == 2)
        #expect(Self.drain(list) == ["a", "b"])
    }

    @Test func removingFromEitherEndOrTheMiddle() {
        let list = IdleConnectionList<Node>()
        let nodes = (0..<5).map { Node("\($0)") }
        for node in nodes { list.append(node) }
        list.remove(nodes[2])
        list.remove(nodes[0])
        list.remove(nodes[4])
        list.remove(nodes[4])  // not in: no change
        #expect(list.count == 2)
        list.append(nodes[0])
        #expect(Self.drain(list) == ["1", "3", "0"])
    }

    @Test func budgetGivesAtMostItsLimit() {
        let budget = ConnectionBudget(limit: 3)
        #expect((0..<5).map { _ in budget.tryAcquire() } == [true, true, true, false, false])
        #expect(budget.count == 3 && !budget.hasRoom)
        budget.release()
        #expect(budget.hasRoom && budget.tryAcquire() && !budget.tryAcquire())
        // A lowered limit refuses until enough close; the open ones are not cut.
        budget.limit = 1
        #expect(!budget.tryAcquire() && budget.count == 3)
        budget.release()
        budget.release()
        #expect(!budget.tryAcquire())
        budget.release()
        #expect(budget.tryAcquire())
    }

    /// Workers race for the last slots from their own threads: exactly `limit` win.
    @Test func budgetHoldsUnderConcurrentAccepts() {
        let budget = ConnectionBudget(limit: 1000)
        let wins = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var mine = 0
            for _ in 0..<500 where budget.tryAcquire() { mine += 1 }
            wins.add(mine)
        }
        #expect(wins.value == 1000 && budget.count == 1000)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<125 { budget.release() }
        }
        #expect(budget.count == 0)
    }

    final class Counter: @unchecked Sendable {
        private let lock = DispatchQueue(label: "counter")
        private var total = 0
        func add(_ n: Int) { lock.sync { total += n } }
        var value: Int { lock.sync { total } }
    }
}
