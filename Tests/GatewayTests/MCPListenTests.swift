import JOSE
import Testing

@testable import Gateway

/// `subscriptions/listen` (MCP 2026-07-28): when the gateway ends its stream, and the event it
/// ends it with.
@Suite("MCP: a listen stream's end")
struct MCPListenTests {
    @Test func theEarlierOfTheTimeoutAndTheTokensExpiryEndsIt() {
        let byTimeout = StreamEnd(timeout: 3600, expiresAt: 1_000_000 + 7200, now: 1_000_000)
        #expect(byTimeout.after == 3600 && byTimeout.why == .listenTimeout)
        let byToken = StreamEnd(timeout: 3600, expiresAt: 1_000_000 + 60, now: 1_000_000)
        #expect(byToken.after == 60 && byToken.why == .tokenExpired)
        // A token already past its exp (admitted within the clock skew allowed) ends it at once.
        let past = StreamEnd(timeout: 3600, expiresAt: 1_000_000 - 5, now: 1_000_000)
        #expect(past.after == 0 && past.why == .tokenExpired)
        // No exp (an opaque token's introspection without one): the timeout alone.
        #expect(StreamEnd(timeout: 10, expiresAt: nil, now: 1_000_000).after == 10)
        // Int64's extremes do not trap.
        #expect(StreamEnd(timeout: 10, expiresAt: .max, now: 1_000_000).why == .listenTimeout)
        #expect(StreamEnd(timeout: 10, expiresAt: .min, now: 1_000_000).after == 0)
    }

    @Test func itClosesWithTheListensResultStampedWithItsID() throws {
        for id in [JSONValue.number("7"), .string("listen-1")] {
            let event = MCPListen.closingEvent(id: id)
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
