import Foundation
import Testing

@testable import Reactor

/// Request bodies on the HTTP/1.1 server: read only when asked, whole (`collect`) or
/// streamed with backpressure, bounded, 100-continue only when the body is wanted.
@Suite("HTTP/1.1 server: request bodies", .serialized)
struct HTTP1ServerBodyTests {
    /// Collects the body (bounded by `limit`) and answers with it, or 413 / 400.
    static func echoBody(_ log: ExchangeLog, limit: Int = 1 << 20) -> (ServerExchange) -> Void {
        { exchange in
            log.record(exchange)
            exchange.body.collect(limit: limit) { result in
                log.bodyResults.append(result)
                switch result {
                case .success(let bytes): exchange.responder.respond(status: 200, body: bytes)
                case .failure(.tooLarge): exchange.responder.respond(status: 413)
                case .failure: exchange.responder.respond(status: 400)
                }
            }
        }
    }

    static let chunkedHello =
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"

    @Test func collectsContentLengthAndChunkedBodies() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(handler: Self.echoBody(log))
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world")
        #expect(client.readResponse()?.text == "hello world")
        client.send(Self.chunkedHello)
        #expect(client.readResponse()?.text == "hello world")
        // Split across writes: the head, then the body in pieces.
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab")
        usleep(20_000)
        client.send("cdef")
        #expect(client.readResponse()?.text == "abcdef")
        #expect(harness.wait { log.completions == [true, true, true] })
    }

    @Test func streamsLargeBodiesWithPauseAndResume() throws {
        let loop = EventLoop()
        let sink = CollectingSink()
        let harness = try HTTP1ServerHarness(loop: loop) { exchange in
            // Backpressure: pause after every chunk, resume on a later loop turn.
            sink.onChunk = { _ in
                exchange.body.pause()
                loop.schedule(after: 0.001) { exchange.body.resume() }
            }
            sink.onEnd = {
                exchange.responder.respond(
                    status: sink.failure == nil ? 200 : 400, body: Array("\(sink.bytes.count)".utf8))
            }
            exchange.body.stream(to: sink)
        }
        defer { harness.stop() }
        let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let client = try TestClient(port: harness.port)
        client.send(Array("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        let response = try #require(client.readResponse())
        #expect(response.status == 200 && response.text == "300000")
        #expect(harness.onLoop { sink.bytes == body && sink.ended && sink.chunks > 1 })
    }

    /// A chunked body streams to its reader; its trailer section (RFC 9112 §7.1.2) comes
    /// with its end.
    @Test(arguments: [
        ("", []),
        ("X-Checksum: 42\r\nX-B: b\r\n", ["X-Checksum: 42", "X-B: b"])
    ])
    func streamsAChunkedBody(trailerSection: String, trailers: [String]) throws {
        let sink = CollectingSink()
        let harness = try HTTP1ServerHarness { exchange in
            sink.onEnd = { exchange.responder.respond(status: 200, body: sink.bytes) }
            exchange.body.stream(to: sink)
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send(Self.chunkedHello.replacingOccurrences(of: "0\r\n\r\n", with: "0\r\n\(trailerSection)\r\n"))
        #expect(client.readResponse()?.text == "hello world")
        #expect(harness.onLoop { sink.ended && sink.failure == nil })
        #expect(harness.onLoop { sink.trailers.map { "\($0.name): \($0.value)" } } == trailers)
    }

    @Test func continueIsSentWhenTheBodyIsRead() throws {
        let log = ExchangeLog()
        let loop = EventLoop()
        let harness = try HTTP1ServerHarness(loop: loop) { exchange in
            // The body is asked for after a while (as after an authentication decision).
            loop.schedule(after: 0.05) { Self.echoBody(log)(exchange) }
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let interim = try #require(client.readResponse())
        #expect(interim.statusLine == "HTTP/1.1 100 Continue")
        client.send("hello")
        let final = try #require(client.readResponse())
        #expect(final.status == 200 && final.text == "hello")
    }

    /// The gateway says 100 itself (an upstream's, relayed) before it reads: exactly one 100
    /// reaches the client, and only a client that asked is owed one.
    @Test func sendContinueSaysItOnceAheadOfTheBody() throws {
        let owed = ResultBox<[Bool]>()
        owed.value = []
        let loop = EventLoop()
        let harness = try HTTP1ServerHarness(loop: loop) { exchange in
            owed.value?.append(exchange.body.expectsContinue)
            loop.schedule(after: 0.05) {
                exchange.body.sendContinue()
                owed.value?.append(exchange.body.expectsContinue)
                exchange.body.sendContinue()
                let sink = CollectingSink()
                sink.onEnd = { exchange.responder.respond(status: 200, body: sink.bytes) }
                exchange.body.stream(to: sink)
            }
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let interim = try #require(client.readResponse())
        #expect(interim.statusLine == "HTTP/1.1 100 Continue")
        client.send("hello")
        let final = try #require(client.readResponse())
        #expect(final.status == 200 && final.text == "hello")
        // HTTP/1.0 (RFC 9110 §10.1.1: its Expect is ignored) and an empty body owe nothing.
        client.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n")
        #expect(client.readResponse()?.status == 200)
        let old = try TestClient(port: harness.port)
        old.send("POST / HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi")
        #expect(old.readResponse()?.status == 200)
        #expect(harness.onLoop { owed.value } == [true, false, false, false, false, false])
    }

    @Test func noContinueWhenAnsweredWithoutReadingTheBody() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness { exchange in
            log.record(exchange)
            exchange.responder.respond(status: 401)
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.status == 401)
        #expect(response.field("Connection") == "close")
        #expect(client.closedByPeer())
        #expect(harness.wait { log.completions == [true] })
    }

    @Test func collectPastItsLimitIsTooLarge() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(handler: Self.echoBody(log, limit: 8))
        defer { harness.stop() }
        // Announced too large: refused before a byte is read.
        let first = try TestClient(port: harness.port)
        first.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        let refused = try #require(first.readResponse())
        #expect(refused.status == 413 && refused.field("Connection") == "close")
        // Chunked: found too large while reading.
        let second = try TestClient(port: harness.port)
        second.send(Self.chunkedHello)
        #expect(second.readResponse()?.status == 413)
        #expect(second.closedByPeer())
        #expect(harness.wait { log.bodyResults.count == 2 && log.completions == [true, true] })
        #expect(harness.onLoop { log.bodyResults.allSatisfy { $0 == .failure(.tooLarge) } })
    }

    @Test func maxBodySizeHoldsWhileStreaming() throws {
        var options = HTTPServerOptions()
        options.maxBodySize = 1000
        let sink = CollectingSink()
        let harness = try HTTP1ServerHarness(options: options) { exchange in
            sink.onEnd = { exchange.responder.respond(status: sink.failure == .tooLarge ? 413 : 200) }
            exchange.body.stream(to: sink)
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        let chunk = String(repeating: "a", count: 600)
        client.send(
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n"
        )
        #expect(client.readResponse()?.status == 413)
        #expect(harness.onLoop { sink.failure == .tooLarge && sink.bytes.count == 600 && !sink.ended })
    }

    @Test func unreadBodyIsDiscardedAndTheConnectionKept() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness { exchange in
            log.record(exchange)
            exchange.responder.respond(status: 200, body: Array(exchange.head.target.utf8))
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789")
        #expect(client.readResponse()?.text == "/1")
        client.send(Self.chunkedHello.replacingOccurrences(of: "POST /", with: "POST /2"))
        #expect(client.readResponse()?.text == "/2")
        client.send("GET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.text == "/3")
        #expect(harness.wait { log.completions == [true, true, true] })
        #expect(harness.onLoop { log.connections.count == 3 && log.connections[0] === log.connections[2] })
    }
}
