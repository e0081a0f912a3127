import Glibc
import Testing

@testable import Reactor

@Suite("ByteQueue: bytes in at the end, out at the front, moved without copies")
struct ByteQueueTests {
    func bytes(_ n: Int, from start: Int = 0) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: start + $0) } }

    /// A queue whose bytes sit in at least two pieces: the second queue's memory is linked
    /// in, not copied.
    func twoPieces(_ first: [UInt8], _ second: [UInt8]) -> ByteQueue {
        let queue = ByteQueue(first)
        queue.append(allOf: ByteQueue(second))
        return queue
    }

    func pieces(_ queue: ByteQueue, _ range: Range<Int>) -> [[UInt8]] {
        var seen: [[UInt8]] = []
        queue.forEachPiece(in: range) { piece in
            seen.append(Array(piece))
            return true
        }
        return seen
    }

    @Test func appendsKeepOrderAndTakeEmptiesTheFront() {
        let queue = ByteQueue("ab")
        queue.append([0x63])
        queue.append(ArraySlice([0x64, 0x65]))
        queue.append("f" as StaticString)
        bytes(3, from: 0x67).withUnsafeBytes { queue.append($0) }
        #expect(queue.count == 9)
        #expect(queue.take(4) == Array("abcd".utf8))
        #expect(queue.take(100) == Array("efghi".utf8))
        #expect(queue.isEmpty)
        #expect(queue.take(1) == [])
    }

    @Test func frontIsTheFirstPieceAndEmptyWhenTheQueueIs() {
        #expect(ByteQueue().front.count == 0)
        let queue = twoPieces(bytes(5), bytes(7, from: 100))
        let front = Array(queue.front)
        #expect(!front.isEmpty && front.count <= 12)
        #expect(front == Array((bytes(5) + bytes(7, from: 100)).prefix(front.count)))
    }

    @Test func pullUpJoinsPiecesAndRefusesMoreThanIsHeld() {
        let queue = twoPieces(bytes(5), bytes(7, from: 100))
        let joined = queue.pullUp(9).map { Array($0) }
        #expect(joined == bytes(5) + bytes(4, from: 100))
        #expect(queue.count == 12, "a pull-up takes nothing")
        #expect(queue.pullUp(13) == nil)
        #expect(queue.pullUp(0) == nil)
    }

    @Test func piecesCoverExactlyTheRangeAcrossTheJoin() {
        let queue = twoPieces(bytes(5), bytes(7, from: 100))
        #expect(pieces(queue, 0..<12).count == 2, "the join is a piece boundary")
        #expect(pieces(queue, 0..<12).flatMap { $0 } == bytes(5) + bytes(7, from: 100))
        #expect(pieces(queue, 3..<8).flatMap { $0 } == [3, 4, 100, 101, 102])
        #expect(pieces(queue, 6..<6).isEmpty)
        #expect(queue.count == 12, "looking takes nothing")
    }

    @Test func aVisitThatSaysStopSeesNoMorePieces() {
        let queue = twoPieces(bytes(5), bytes(7, from: 100))
        var visits = 0
        queue.forEachPiece(in: 0..<12) { _ in
            visits += 1
            return false
        }
        #expect(visits == 1)
    }

    @Test func aThrowingVisitStopsAndTheErrorComesOut() {
        struct Refused: Error {}
        let queue = twoPieces(bytes(5), bytes(7, from: 100))
        #expect(throws: Refused.self) {
            try queue.forEachPiece(in: 0..<12) { _ throws(Refused) in throw Refused() }
        }
        #expect(queue.count == 12)
    }

    @Test func moveHandsOverTheFrontAndDrainDropsIt() {
        let source = twoPieces(bytes(5), bytes(7, from: 100))
        let sink = ByteQueue([9])
        #expect(source.move(6, to: sink) == 6)
        #expect(sink.take(10) == [9] + bytes(5) + [100])
        source.drain(2)
        #expect(source.take(10) == [103, 104, 105, 106])
        source.append([1, 2])
        source.drain()
        #expect(source.isEmpty)
    }

    @Test func appendAllOfEmptiesTheOther() {
        let queue = ByteQueue([1])
        let other = ByteQueue([2, 3])
        queue.append(allOf: other)
        #expect(other.isEmpty)
        #expect(queue.take(3) == [1, 2, 3])
    }

    @Test func removeCopiesOutAtMostTheDestination() {
        let queue = ByteQueue(bytes(10))
        var out = [UInt8](repeating: 0, count: 4)
        let n = out.withUnsafeMutableBytes { queue.remove(into: $0) }
        #expect(n == 4 && out == bytes(4))
        #expect(queue.count == 6)
        #expect(queue.remove(into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) == 0)
    }

    @Test func appendInPlaceKeepsWhatTheFillSaysAndNothingOnFailure() {
        let queue = ByteQueue([1])
        let kept = queue.appendInPlace(upTo: 8) { space in
            #expect(space.count == 8, "never more room than asked")
            for i in 0..<3 { space[i] = UInt8(10 + i) }
            return 3
        }
        #expect(kept == 3)
        let none = queue.appendInPlace(upTo: 8) { space in
            space[0] = 99
            errno = EAGAIN
            return -1
        }
        #expect(none == -1)
        #expect(errno == EAGAIN, "the fill's errno survives the give-back")
        #expect(queue.take(10) == [1, 10, 11, 12])
    }

    @Test func scanShowsEveryByteInOrderWithoutTakingThem() {
        let queue = twoPieces(bytes(3), bytes(2, from: 50))
        var seen: [UInt8] = []
        queue.scan { seen += $0 }
        #expect(seen == [0, 1, 2, 50, 51])
        #expect(queue.count == 5)
    }

    @Test func aChunkMovesExactlyItsCountAndCanKeepItsQueueAlive() {
        let source = ByteQueue(bytes(6))
        let sink = ByteQueue()
        BodyChunk(queue: source, count: 4).move(to: sink)
        #expect(sink.take(10) == bytes(4))
        BodyChunk(queue: source, count: 1).drop()
        #expect(source.take(10) == [5])
        // The chunk is all that holds the queue: its bytes are still there to move.
        let chunk = ByteQueue([7, 8]).chunk
        sink.append(chunk)
        #expect(sink.take(10) == [7, 8])
    }

    @Test func receiveAndSendMoveBytesThroughASocketPair() throws {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer {
            Glibc.close(fds[0])
            Glibc.close(fds[1])
        }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        let out = twoPieces(bytes(5), bytes(7, from: 100))
        let (sent, full) = out.send(to: fds[0])
        #expect(sent == 12 && !full)
        #expect(out.isEmpty, "what went out is dropped")

        let input = ByteQueue()
        var filled = true
        #expect(input.receive(from: fds[1], max: 64, filled: &filled) == 12)
        #expect(!filled, "a short read emptied the socket")
        #expect(input.take(12) == bytes(5) + bytes(7, from: 100))
        #expect(input.receive(from: fds[1], max: 64, filled: &filled) == -1)
        #expect(errno == EAGAIN)
        #expect(input.isEmpty, "a failed read keeps nothing")

        let more = ByteQueue(bytes(4)).send(to: fds[0])
        #expect(more.sent == 4)
        #expect(input.receive(from: fds[1], max: 3, filled: &filled) == 3)
        #expect(filled, "the read took all the room it asked for")
    }

    @Test func aBorrowedQueueIsAViewThatLeavesTheBytesToItsOwner() {
        let owner = ByteQueue([1, 2, 3])
        do {
            let view = ByteQueue(borrowing: owner.raw)
            #expect(view.take(1) == [1])
        }
        #expect(owner.take(5) == [2, 3], "the view's end freed nothing")
    }
}
