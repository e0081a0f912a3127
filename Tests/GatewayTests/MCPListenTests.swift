import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// `subscriptions/listen` (MCP 2026-07-28): when the gateway ends its stream, and the event it
/// ends it with.
@Suite("MCP: a listen stream's end")
struct MCPListenTests {
    @Test func theEarlierOfTheTimeoutAndTheTokensExpiryEndsIt() {
        let byTimeout = StreamEnd(timeout: 3600, expiresAt: 1_000_000 + 7200, now: 1_000_000)
        #expect(byTimeout.at == 1_003_600 && byTimeout.why == .listenTimeout)
        let byToken = StreamEnd(timeout: 3600, expiresAt: 1_000_000 + 60, now: 1_000_000)
        #expect(byToken.at == 1_000_060 && byToken.why == .tokenExpired)
        // Fixed when judged: time later stages take does not move it.
        #expect(byToken.left(1_000_050) == 10)
        // A token already past its exp (admitted within the clock skew allowed) ends it at once.
        let past = StreamEnd(timeout: 3600, expiresAt: 1_000_000 - 5, now: 1_000_000)
        #expect(past.left(1_000_000) == 0.001 && past.why == .tokenExpired)
        // No exp (an opaque token's introspection without one): the timeout alone.
        #expect(StreamEnd(timeout: 10, expiresAt: nil, now: 1_000_000).at == 1_000_010)
        // Int64's extremes do not trap.
        #expect(StreamEnd(timeout: 10, expiresAt: .max, now: 1_000_000).why == .listenTimeout)
        #expect(StreamEnd(timeout: 10, expiresAt: .min, now: 1_000_000).left(1_000_000) == 0.001)
    }

    /// Only a 200 SSE stream framed by its end, under no content coding, takes the event.
    @Test func onlyAnEventStreamTakesTheClosingEvent() {
        func head(_ status: Int, _ fields: [(String, String)]) -> HTTPResponseHead {
            var f = HTTP1Fields()
            for (n, v) in fields { f.append(n, v) }
            return HTTPResponseHead(status: status, fields: f)
        }
        let sse = ("Content-Type", "text/event-stream")
        #expect(StreamEndStage.takesClosingEvent(head(200, [sse])))
        #expect(StreamEndStage.takesClosingEvent(head(200, [("content-type", "Text/Event-Stream; charset=utf-8")])))
        #expect(!StreamEndStage.takesClosingEvent(head(200, [("Content-Type", "application/json")])))
        #expect(!StreamEndStage.takesClosingEvent(head(200, [sse, ("Content-Length", "40")])))
        #expect(!StreamEndStage.takesClosingEvent(head(200, [sse, ("Content-Encoding", "gzip")])))
        #expect(!StreamEndStage.takesClosingEvent(head(403, [sse])))
        #expect(!StreamEndStage.takesClosingEvent(head(200, [])))
    }

    @Test func itClosesWithTheListensResultStampedWithItsID() throws {
        // An id longer than a closing event repeats: the stream just ends.
        #expect(MCPListen.closingEvent(id: .string(String(repeating: "x", count: 300))) == nil)
        for id in [JSONValue.number("7"), .string("listen-1")] {
            guard let event = MCPListen.closingEvent(id: id) else {
                Issue.record("no event for \(id)")
                continue
            }
            let prefix = Array("event: message\r\ndata: ".utf8)
            #expect(Array(event.prefix(prefix.count)) == prefix && Array(event.suffix(4)) == Array("\r\n\r\n".utf8))
            let data = Array(event.dropFirst(prefix.count).dropLast(4))
            guard case .object(let message) = try JSONParser.parse(data) else {
                Issue.record("not an object")
                continue
            }
            #expect(message["jsonrpc"] == .string("2.0") && message["id"] == id)
            #expect(message["result"]?.object?["_meta"]?.object?["io.modelcontextprotocol/subscriptionId"] == id)
        }
    }
}
