import Foundation
import TestSupport
import Testing

@testable import Reactor

/// `Expect: 100-continue` towards the upstream (RFC 9110 §10.1.1): with a continue timeout
/// the head goes alone, and the client's body is read only once the upstream says 100, or
/// stays silent that long; a final answer first means the body is never read.
@Suite("UpstreamCall: 100-continue")
struct UpstreamContinueTests {
    static let hello = Array("hello".utf8)

    static func body(_ loop: EventLoop) -> ScriptedRequestBody {
        ScriptedRequestBody(loop: loop, framing: .length(5), chunks: [hello], expectsContinue: true)
    }

    static func head(_ request: [UInt8]) -> String { String(decoding: request, as: UTF8.self) }

    @Test func theUpstreams100LetsTheBodyGo() throws {
        let server = try ScriptedUpstream([
            [
                .readHead, .send("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"),
                .readBytes(5), .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let body = Self.body(h.loop)
        let r = h.call(.POST, "/up", body: body, continueTimeout: 30)
        // 103 passes as before; the 100 is the call's, and the body follows it.
        #expect(r.events == ["interim 103", "continue", "head 200", "body", "complete"])
        #expect(body.streamed && body.continues == 1 && body.delivered == 5)
        #expect(
            server.requestTexts == [
                "POST /up HTTP/1.1\r\nHost: upstream\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", "hello"
            ])
        #expect(h.pool.idleCount == 1, "a complete exchange keeps its connection")
    }

    @Test(arguments: [417, 413, 401])
    func aFinalAnswerFirstMeansTheBodyIsNeverRead(status: Int) throws {
        let server = try ScriptedUpstream([
            [.readHead, .send("HTTP/1.1 \(status) No\r\nContent-Length: 2\r\n\r\nno"), .expectClose]
        ])
        let h = UpstreamHarness(port: server.port)
        let body = Self.body(h.loop)
        let r = h.call(.POST, "/up", body: body, continueTimeout: 30)
        #expect(r.events == ["head \(status)", "body", "complete"])
        #expect(!body.streamed && body.continues == 0, "the client was never told to send")
        #expect(server.requests.count == 1 && Self.head(server.requests[0]).hasSuffix("Content-Length: 5\r\n\r\n"))
        // The upstream still expects the announced body: the connection cannot be reused.
        #expect(h.pool.openConnections == 0)
        _ = server.finished.wait(timeout: .now() + 5)
        #expect(server.clientClosed == [true])
    }

    @Test func aSilentUpstreamGetsTheBodyAfterTheTimeout() throws {
        let server = try ScriptedUpstream([
            [.readHead, .readBytes(5), .send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]
        ])
        let h = UpstreamHarness(port: server.port)
        let body = Self.body(h.loop)
        let r = h.call(.POST, "/up", body: body, continueTimeout: 0.1)
        #expect(r.events == ["continue", "head 200", "complete"])
        #expect(body.streamed && body.continues == 1)
        #expect(server.requestTexts.last == "hello")
    }

    /// A 100 that comes after the wait ended answers nothing any more: the client heard one
    /// 100 already, and hears no second.
    @Test func aLate100IsDropped() throws {
        let server = try ScriptedUpstream([
            [
                .readHead, .readBytes(5),
                .send("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let body = Self.body(h.loop)
        let r = h.call(.POST, "/up", body: body, continueTimeout: 0.1)
        #expect(r.events == ["continue", "head 200", "complete"])
        #expect(body.continues == 1)
    }

    @Test func a100NobodyAskedForIsDropped() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call(.POST, "/up", body: BufferedRequestBody(Self.hello))
        #expect(r.events == ["head 200", "complete"])
        #expect(server.requestTexts == ["POST /up HTTP/1.1\r\nHost: upstream\r\nContent-Length: 5\r\n\r\nhello"])
    }

    /// RFC 9110 §10.1.1: from past interaction, an HTTP/1.0 upstream is not asked (it would
    /// never answer 100): the body goes with the head.
    @Test func anHTTP10UpstreamIsNotAsked() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")],
            [.readRequest, .send("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")]
        ])
        let h = UpstreamHarness(port: server.port)
        #expect(h.call(.GET, "/first").completed)
        let body = Self.body(h.loop)
        // A wait of 30 s would outlast the call's limit: it completes only if nothing waits.
        let r = h.call(.POST, "/up", body: body, continueTimeout: 30, limit: 3)
        #expect(r.events == ["head 200", "complete"])
        #expect(server.requestTexts.last == "POST /up HTTP/1.1\r\nHost: upstream\r\nContent-Length: 5\r\n\r\nhello")
    }

    /// The caller's own Expect never goes as sent: framing-like fields are the call's.
    @Test func theFieldsOwnExpectIsNotWritten() throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 204 No Content\r\n\r\n")]])
        let h = UpstreamHarness(port: server.port)
        let r = h.call(
            .POST, "/up", fields: [("Host", "upstream"), ("Expect", "100-continue")],
            body: BufferedRequestBody(Self.hello))
        #expect(r.completed)
        #expect(server.requestTexts == ["POST /up HTTP/1.1\r\nHost: upstream\r\nContent-Length: 5\r\n\r\nhello"])
    }
}
