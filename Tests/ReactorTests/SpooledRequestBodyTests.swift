import Foundation
import Testing

@testable import Reactor

@Suite("SpooledRequestBody: a client's body read whole, then streamed on in order")
struct SpooledRequestBodyTests {
    /// A client's body as an engine streams it: the chunks, then the end or a failure.
    final class ClientBody: RequestBody {
        let chunks: [[UInt8]]
        let ending: Result<HTTP1Fields, RequestBodyFailure>
        init(_ chunks: [[UInt8]], ending: Result<HTTP1Fields, RequestBodyFailure> = .success(HTTP1Fields())) {
            self.chunks = chunks
            self.ending = ending
        }
        var framing: RequestBodyFraming { .streamed }
        var expectsContinue: Bool { false }
        func sendContinue() {}
        func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {}
        func stream(to sink: RequestBodySink) {
            for c in chunks { sink.requestBody(ByteQueue(c).chunk) }
            switch ending {
            case .success(let trailers): sink.requestBodyEnd(trailers: trailers)
            case .failure(let why): sink.requestBodyFailed(why)
            }
        }
        func pause() {}
        func resume() {}
        func discard() {}
    }

    /// An upstream call's side: takes chunks, pausing the body after each when asked to.
    final class Upstream: RequestBodySink {
        var bytes: [UInt8] = []
        var chunks = 0
        var ended: HTTP1Fields?
        var failed: RequestBodyFailure?
        var pauseEach = false
        weak var body: RequestBody?
        func requestBody(_ chunk: BodyChunk) {
            bytes += chunk.take()
            chunks += 1
            if pauseEach { body?.pause() }
        }
        func requestBodyEnd(trailers: HTTP1Fields) { ended = trailers }
        func requestBodyFailed(_ failure: RequestBodyFailure) { failed = failure }
    }

    func bytes(_ n: Int, from start: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: start * 7 + $0) } }

    func read(
        _ source: ClientBody, memory: Int = 4096, budget: SpoolBudget = SpoolBudget(limit: 1 << 30)
    ) -> (SpooledRequestBody, SpooledRequestBody.Outcome?) {
        let body = SpooledRequestBody(
            reading: source, memory: memory, directory: NSTemporaryDirectory(), budget: budget, maxBytes: 1 << 30)
        var outcome: SpooledRequestBody.Outcome?
        body.read { outcome = $0 }
        return (body, outcome)
    }

    @Test func aSmallBodyStaysInMemoryAndGoesOnByLength() {
        let (body, outcome) = read(ClientBody([bytes(1000, from: 0), bytes(500, from: 1)]))
        #expect(outcome == .whole)
        #expect(!body.spooled)
        #expect(body.framing == .length(1500))
        #expect(!body.expectsContinue)
        let up = Upstream()
        body.stream(to: up)
        #expect(up.bytes == bytes(1000, from: 0) + bytes(500, from: 1))
        #expect(up.ended != nil)
    }

    @Test func aLargeBodyGoesToAFileAndComesBackInOrderThroughPauses() {
        let chunks = (0..<40).map { bytes(3000, from: $0) }
        let budget = SpoolBudget(limit: 1 << 30)
        let (body, outcome) = read(ClientBody(chunks), budget: budget)
        #expect(outcome == .whole)
        #expect(body.spooled)
        #expect(body.framing == .length(120_000))
        #expect(budget.inUse > 0)
        let up = Upstream()
        up.pauseEach = true
        up.body = body
        body.stream(to: up)
        var resumes = 0
        while up.ended == nil && resumes < 1000 {
            #expect(up.failed == nil)
            body.resume()
            resumes += 1
        }
        #expect(up.bytes == chunks.flatMap { $0 })
        #expect(resumes > 1)
        #expect(up.ended != nil)
        #expect(budget.inUse == 0)
    }

    @Test func trailersKeepTheBodyStreamedAndGoOnAtTheEnd() {
        let trailers = HTTP1Fields([("Checksum", "abc")])
        let (body, outcome) = read(ClientBody([bytes(10, from: 0)], ending: .success(trailers)))
        #expect(outcome == .whole)
        #expect(body.framing == .streamed)
        let up = Upstream()
        body.stream(to: up)
        #expect(up.ended?.first("checksum") == "abc")
    }

    @Test(arguments: [RequestBodyFailure.tooSlow, .tooLarge, .clientGone, .malformed, .pastDeadline])
    func aClientBodyThatFailsIsReportedAsItFailed(_ why: RequestBodyFailure) {
        let (_, outcome) = read(ClientBody([bytes(9000, from: 0)], ending: .failure(why)))
        #expect(outcome == .failed(why))
    }

    @Test func pastTheProcesssDiskCapThereIsNoRoom() {
        let budget = SpoolBudget(limit: 5000)
        let (_, outcome) = read(ClientBody((0..<5).map { bytes(3000, from: $0) }), budget: budget)
        #expect(outcome == .noRoom)
        #expect(budget.failures == 1)
        #expect(budget.inUse == 0)
    }

    @Test func noFileMeansNoRoomOnlyPastMemory() {
        let small = SpooledRequestBody(
            reading: ClientBody([bytes(100, from: 0)]), memory: 4096, directory: "/nonexistent/dir",
            budget: SpoolBudget(limit: 1 << 20), maxBytes: 1 << 20)
        var outcome: SpooledRequestBody.Outcome?
        small.read { outcome = $0 }
        #expect(outcome == .whole)
        let large = SpooledRequestBody(
            reading: ClientBody([bytes(5000, from: 0)]), memory: 4096, directory: "/nonexistent/dir",
            budget: SpoolBudget(limit: 1 << 20), maxBytes: 1 << 20)
        large.read { outcome = $0 }
        #expect(outcome == .noRoom)
    }

    @Test func collectReturnsTheWholeBodyOrRefusesPastItsLimit() throws {
        let chunks = (0..<4).map { bytes(3000, from: $0) }
        let (body, _) = read(ClientBody(chunks))
        var got: Result<[UInt8], RequestBodyFailure>?
        body.collect(limit: 1 << 20) { got = $0 }
        #expect(try got?.get() == chunks.flatMap { $0 })
        let (other, _) = read(ClientBody(chunks))
        other.collect(limit: 100) { got = $0 }
        #expect(throws: RequestBodyFailure.tooLarge) { try got?.get() }
    }
}
