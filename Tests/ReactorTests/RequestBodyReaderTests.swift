import Testing

@testable import Reactor

/// The request body's account that HTTP/1.1 and HTTP/2 share (`RequestBodyReader`), driven
/// without a socket: the pace check and the paused time it leaves out, pause and resume once
/// each, the consumer handed over once, and a streamed body's limits. The engines that move
/// the bytes are in HTTP1ServerBodyPaceTests, HTTP1ServerBodyTests and the h2 integration
/// tests.
@Suite("Request body reader")
struct RequestBodyReaderTests {
    /// 100 bytes a second after a 2 s grace, and 10 s in all.
    static let pace = BodyPace(deadline: 10, minRate: 100, grace: 2)

    @Test func noPaceMeansNoCheck() {
        var reader = RequestBodyReader()
        reader.startPace(BodyPace(), now: 50)
        #expect(reader.paceNextAt == nil)
    }

    @Test func thePaceIsCheckedFirstAtTheEndOfTheGrace() {
        var reader = RequestBodyReader()
        reader.startPace(Self.pace, now: 100)
        #expect(reader.paceNextAt == 102)
    }

    @Test func aBodyOnPaceGetsItsNextCheck() throws {
        var reader = RequestBodyReader()
        reader.startPace(Self.pace, now: 100)
        reader.bytes = 300
        guard case .onPace = reader.judgePace(Self.pace, now: 102) else {
            Issue.record("300 bytes in 2 s is on pace")
            return
        }
        let next = try #require(reader.paceNextAt)
        #expect(next > 102 && next <= 110)
    }

    @Test func aTrickleIsTooSlow() {
        var reader = RequestBodyReader()
        reader.startPace(Self.pace, now: 100)
        reader.bytes = 10
        let r1 = reader.judgePace(Self.pace, now: 104)
        #expect(r1 == .tooSlow)
    }

    @Test func theDeadlineHoldsWhateverTheRate() {
        var reader = RequestBodyReader()
        reader.startPace(Self.pace, now: 100)
        reader.bytes = 1 << 20
        let r2 = reader.judgePace(Self.pace, now: 110)
        #expect(r2 == .pastDeadline)
    }

    /// Four seconds held back by the gateway (an upstream that reads slowly) are not the
    /// client's: 300 bytes in 2 active seconds are on pace, though 6 s have passed.
    @Test func pausedTimeIsLeftOutOfTheRate() {
        var reader = RequestBodyReader()
        reader.startPace(Self.pace, now: 100)
        reader.bytes = 300
        let r3 = reader.pause(now: 101)
        #expect(r3)
        #expect(reader.paused)
        let r4 = reader.resume(now: 105)
        #expect(r4)
        #expect(!reader.paused)
        guard case .onPace = reader.judgePace(Self.pace, now: 106) else {
            Issue.record("the paused time counted against the client")
            return
        }
        var unpaused = RequestBodyReader()
        unpaused.startPace(Self.pace, now: 100)
        unpaused.bytes = 300
        let r5 = unpaused.judgePace(Self.pace, now: 106)
        #expect(r5 == .tooSlow)
    }

    @Test func pauseAndResumeTakeEffectOnce() {
        var reader = RequestBodyReader()
        let r6 = reader.resume(now: 1)
        #expect(!r6)
        let r7 = reader.pause(now: 1)
        #expect(r7)
        let r8 = reader.pause(now: 2)
        #expect(!r8)
        let r9 = reader.resume(now: 3)
        #expect(r9)
        let r10 = reader.resume(now: 4)
        #expect(!r10)
    }

    @Test func theConsumerIsHandedOverOnce() {
        var reader = RequestBodyReader()
        reader.startPace(Self.pace, now: 0)
        reader.consumer = .discarding(remaining: 10)
        guard case .discarding(let remaining) = reader.finish() else {
            Issue.record("the consumer was not handed over")
            return
        }
        #expect(remaining == 10)
        guard case .finished = reader.finish() else {
            Issue.record("a second finish handed a consumer over again")
            return
        }
        // A finished body is no longer paced: its check would fail a body that ended.
        #expect(reader.paceNextAt == nil)
    }

    @Test func aStreamedBodyIsHeldToItsTotal() {
        var reader = RequestBodyReader()
        reader.streamTotal = 8
        let buffer = ByteQueue([UInt8](repeating: 0x61, count: 8))
        reader.bytes = 8
        let r11 = reader.admitsStreamed(buffer.chunk)
        #expect(r11)
        reader.bytes = 9
        let r12 = reader.admitsStreamed(buffer.chunk)
        #expect(!r12)
    }

    /// A gRPC body's messages are counted as they come: a prefix announcing 100 bytes where 16
    /// is the most is refused though the body is within its total.
    @Test func aStreamedGRPCMessageIsHeldToItsLimit() {
        var reader = RequestBodyReader()
        reader.streamTotal = 1 << 20
        reader.grpcMessages = GRPCMessageCounter(GRPCMessageLimit(maxMessage: 16))
        let small = ByteQueue([0, 0, 0, 0, 4, 1, 2, 3, 4])
        reader.bytes = small.count
        let r13 = reader.admitsStreamed(small.chunk)
        #expect(r13)
        let large = ByteQueue([0, 0, 0, 0, 100])
        reader.bytes += large.count
        let r14 = reader.admitsStreamed(large.chunk)
        #expect(!r14)
    }
}
