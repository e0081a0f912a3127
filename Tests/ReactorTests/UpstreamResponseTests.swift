import Foundation
import TestSupport
import Testing

@testable import Reactor

/// The upstream client's response side against a scripted upstream on 127.0.0.1: framing,
/// 1xx, strictness, timeouts, pause/resume and cancel.
@Suite("UpstreamCall: responses")
struct UpstreamResponseTests {
    @Test func getWithContentLength() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Up: 1\r\n\r\nhello")]
        ])
        let h = UpstreamHarness(port: server.port)
        // A Content-Length among the fields is not the call's framing: it must not be sent.
        let r = h.call(.GET, "/a/b?c=d", fields: [("Host", "up.example"), ("X-Test", "v"), ("Content-Length", "99")])
        #expect(r.events == ["head 200", "body", "complete"])
        // The standard reason phrase for the status is nil (HTTPResponseHead.reason).
        #expect(r.head?.reason == nil)
        #expect(r.head?.bodyLength == 5)
        #expect(r.head?.fields.first("X-Up") == "1")
        #expect(r.bodyText == "hello")
        #expect(server.requestTexts == ["GET /a/b?c=d HTTP/1.1\r\nHost: up.example\r\nX-Test: v\r\n\r\n"])
    }

    /// A reason phrase other than the status's standard one is passed on as sent.
    @Test func nonstandardReasonIsKept() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 Fine Thanks\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call(.GET, "/")
        #expect(r.events == ["head 200", "body", "complete"])
        #expect(r.head?.reason == "Fine Thanks")
        #expect(r.head?.bodyLength == nil)
        #expect(r.bodyText == "hi")
    }

    @Test func postWithoutBodySendsContentLengthZero() throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")]])
        let h = UpstreamHarness(port: server.port)
        let r = h.call(.POST, "/p")
        #expect(r.completed && r.head?.status == 201 && r.body.isEmpty)
        #expect(server.requestTexts == ["POST /p HTTP/1.1\r\nHost: upstream\r\nContent-Length: 0\r\n\r\n"])
    }

    @Test func chunkedResponse() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest,
                .send(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
                )
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.completed)
        #expect(r.bodyText == "hello world")
        // Nothing unread and keep-alive: the connection went back to the pool.
        #expect(h.pool.idleCount == 1 && h.pool.openConnections == 1)
    }

    @Test func closeDelimitedResponseEndsAtEOFAndIsNotReused() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\n\r\nuntil the end"), .sleep(0.05), .close]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.events.last == "complete")
        #expect(r.bodyText == "until the end")
        #expect(h.pool.openConnections == 0 && h.pool.idleCount == 0)
    }

    @Test func headResponseHasNoBodyWhateverItsContentLength() throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")]])
        let h = UpstreamHarness(port: server.port)
        let r = h.call(.HEAD)
        #expect(r.events == ["head 200", "complete"])
        #expect(r.head?.fields.first("Content-Length") == "1234")
        #expect(h.pool.idleCount == 1)
    }

    @Test(arguments: ["HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"])
    func bodilessStatuses(_ response: String) throws {
        let server = try ScriptedUpstream([[.readRequest, .send(response)]])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.events.count == 2 && r.events.last == "complete")
        #expect(r.body.isEmpty)
        #expect(h.pool.idleCount == 1)
    }

    @Test func earlyHintsAreDeliveredThenTheFinalResponse() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest,
                .send(
                    "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                )
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.events == ["interim 103", "head 200", "body", "complete"])
        #expect(r.interim.first?.fields.first("Link") == "</s.css>; rel=preload")
        #expect(r.bodyText == "ok")
    }

    @Test func continueIsConsumedSilently() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest,
                .send("HTTP/1.1 100 Continue\r\n\r\n"), .sleep(0.05),
                .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.events == ["head 200", "body", "complete"])
        #expect(r.interim.isEmpty)
    }

    @Test func switchingProtocolsIsInvalid() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest,
                .send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.failure == .invalidResponse && r.failedAfterHead == false)
        #expect(r.head == nil)
        #expect(h.pool.openConnections == 0)
    }

    static let malformed: [(String, Bool)] = [
        ("HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n", false),  // status line
        // CL + TE
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false),
        // bad chunk size, after the head
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", true),
        ("HTTP/1.1 200 OK\nContent-Length: 0\n\n", false),  // bare LF
        ("HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx", false)  // differing lengths
    ]

    @Test(arguments: malformed)
    func malformedResponsesAreInvalid(_ response: String, afterHead: Bool) throws {
        let server = try ScriptedUpstream([[.readRequest, .send(response), .expectClose]])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.failure == .invalidResponse)
        #expect(r.failedAfterHead == afterHead)
        #expect(!r.completed)
        #expect(h.pool.openConnections == 0)
        _ = server.finished.wait(timeout: .now() + 5)
        #expect(server.clientClosed == [true])
    }

    @Test func responseTimeout() throws {
        let server = try ScriptedUpstream([[.readRequest, .sleep(2)]])
        let h = UpstreamHarness(port: server.port, responseTimeout: 0.3)
        let started = Date()
        let r = h.call()
        #expect(r.failure == .responseTimeout && r.failedAfterHead == false)
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(h.pool.openConnections == 0)
    }

    @Test func responseTimeoutIsIdleTimeBetweenBodyBytes() throws {
        // 3 × 0.2 s gaps against a 0.35 s idle deadline: the body arrives whole (an overall
        // deadline would have cut it at 0.35 s); then a 1 s gap fails it after the head.
        let server = try ScriptedUpstream([
            [
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
                .sleep(0.2), .send("ab"), .sleep(0.2), .send("cd"), .sleep(0.2), .send("ef"),
                .sleep(1), .send("ghij")
            ]
        ])
        let h = UpstreamHarness(port: server.port, responseTimeout: 0.35)
        let r = h.call()
        #expect(r.bodyText == "abcdef")
        #expect(r.failure == .responseTimeout && r.failedAfterHead == true)
    }

    @Test func pauseStopsDeliveryUntilResume() throws {
        let size = 300_000
        let payload = String(repeating: "0123456789", count: size / 10)
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n" + payload)]
        ])
        let h = UpstreamHarness(port: server.port, responseTimeout: 0.2)
        var pausedAt: Date?
        var resumedAt: Date?
        let r = h.call { rec in
            rec.onBody = { rec in
                guard pausedAt == nil else { return }
                pausedAt = Date()
                rec.call?.pause()
                // Longer than the response timeout: a paused call is not waiting on the upstream.
                h.loop.schedule(after: 0.5) {
                    resumedAt = Date()
                    rec.call?.resume()
                }
            }
        }
        #expect(r.completed)
        #expect(r.body.count == size && r.bodyText == payload)
        let (p, q) = (try #require(pausedAt), try #require(resumedAt))
        #expect(q.timeIntervalSince(p) >= 0.45)
        // Nothing was delivered while paused.
        #expect(!r.chunkTimes.contains { $0 > p && $0 < q })
        #expect(r.chunkTimes.count >= 2)
    }

    @Test func cancelMidResponse() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst"),
                .sleep(0.1), .send("more"), .expectClose
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call { rec in
            // No delegate call follows a cancel: end the loop step from here.
            rec.onBody = { rec in
                rec.call?.cancel()
                rec.onEnd?()
            }
        }
        h.wait(0.3)
        #expect(r.events == ["head 200", "body"])
        #expect(r.bodyText == "first")
        #expect(h.pool.openConnections == 0)
        _ = server.finished.wait(timeout: .now() + 5)
        #expect(server.clientClosed == [true])
    }
}
