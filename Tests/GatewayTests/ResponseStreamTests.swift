import Reactor
import Testing

@testable import Gateway

/// Which answers proxy buffering leaves alone (`ClientWriter.isStream`): read from the field
/// bytes, ASCII case-insensitively, as the upstream wrote them.
@Suite struct ResponseStreamTests {
    @Test(arguments: [
        [("Content-Type", "text/event-stream")],
        [("content-type", "Text/Event-Stream; charset=utf-8")],
        [("Content-Type", "application/grpc")],
        [("CONTENT-TYPE", "APPLICATION/GRPC+proto")],
        [("Content-Type", "application/grpc-web-text")],
        [("Content-Type", "application/json"), ("X-Accel-Buffering", "no")],
        [("x-accel-buffering", "NO")]
    ])
    func streamsAreNotBuffered(_ fields: [(String, String)]) {
        #expect(ClientWriter.isStream(HTTP1Fields(fields)))
    }

    @Test(arguments: [
        [],
        [("Content-Type", "application/json")],
        [("Content-Type", "text/event")],
        [("Content-Type", "application/grp")],
        [("Content-Type", "application/grpcx")],
        [("Content-Type", "text/html"), ("X-Accel-Buffering", "yes")],
        [("X-Accel-Buffering", "nope")],
        [("X-Accel-Buffering", "n")]
    ])
    func otherAnswersMayBe(_ fields: [(String, String)]) {
        #expect(!ClientWriter.isStream(HTTP1Fields(fields)))
    }
}
