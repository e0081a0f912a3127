import Foundation
import Testing

@testable import Reactor

/// The HTTP/1.1 engine's server side over real sockets on 127.0.0.1: framing, versions,
/// keep-alive and pipelining.
@Suite("HTTP/1.1 server: responses and connections", .serialized)
struct HTTP1ServerTests {
    /// Answers every request 200 with "<method> <target>" as the body.
    static func echoTarget(_ log: ExchangeLog) -> (ServerExchange) -> Void {
        { exchange in
            log.record(exchange)
            exchange.responder.fields.append("Content-Type", "text/plain")
            exchange.responder.respond(
                status: 200, body: Array("\(exchange.head.methodName) \(exchange.head.target)".utf8))
        }
    }

    @Test func simpleGetHasLengthDateAndOurVersion() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(handler: Self.echoTarget(log))
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.statusLine == "HTTP/1.1 200 OK")
        #expect(response.field("Content-Length") == "10")
        #expect(response.text == "GET /a?b=c")
        #expect(response.field("Content-Type") == "text/plain")
        #expect(response.field("Connection") == nil)
        let date = try #require(response.field("Date"))
        #expect(date.hasSuffix(" GMT") && date.count == 29)
        #expect(harness.wait { log.completions == [true] })
        #expect(
            harness.onLoop {
                log.heads.first.map { $0.version == (1, 1) } == true && log.connections.first?.peer == "127.0.0.1"
            })
    }

    @Test func http10RequestGetsHTTP11StatusLineAndClose() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(handler: Self.echoTarget(log))
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET / HTTP/1.0\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.statusLine == "HTTP/1.1 200 OK")
        #expect(response.field("Connection") == "close")
        #expect(client.closedByPeer())
        #expect(harness.wait { log.completions == [true] && harness.server?.openConnections == 0 })
    }

    @Test func http10KeepAliveWhenAsked() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(handler: Self.echoTarget(log))
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let first = try #require(client.readResponse())
        #expect(first.field("Connection") == "keep-alive")
        client.send("GET /2 HTTP/1.0\r\n\r\n")
        let second = try #require(client.readResponse())
        #expect(second.text == "GET /2")
        #expect(client.closedByPeer())
    }

    @Test func keepAliveServesTwoRequestsOnOneConnection() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(handler: Self.echoTarget(log))
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.text == "GET /1")
        client.send("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.text == "GET /2")
        #expect(harness.wait { log.completions == [true, true] })
        #expect(harness.onLoop { log.connections.count == 2 && log.connections[0] === log.connections[1] })
        #expect(harness.onLoop { harness.server?.openConnections == 1 })
    }

    @Test func pipelinedRequestsAreAnsweredInOrderOneAtATime() throws {
        let log = ExchangeLog()
        var inFlight = 0
        var maxInFlight = 0
        let loop = EventLoop()
        let harness = try HTTP1ServerHarness(loop: loop) { exchange in
            log.record(exchange)
            inFlight += 1
            maxInFlight = max(maxInFlight, inFlight)
            // Answered later: the next request must wait for this answer.
            let target = exchange.head.target
            loop.schedule(after: 0.02) {
                inFlight -= 1
                exchange.responder.respond(status: 200, body: Array(target.utf8))
            }
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send(
            "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        let bodies = (0..<3).compactMap { _ in client.readResponse()?.text }
        #expect(bodies == ["/1", "/2", "/3"])
        #expect(harness.onLoop { maxInFlight } == 1)
        #expect(harness.wait { log.completions == [true, true, true] })
    }

    @Test func streamedResponseIsChunkedToHTTP11AndCloseDelimitedToHTTP10() throws {
        let log = ExchangeLog()
        let loop = EventLoop()
        let harness = try HTTP1ServerHarness(loop: loop) { exchange in
            log.record(exchange)
            let responder = exchange.responder
            responder.startStreaming(status: 200)
            responder.write(text: "hello ")
            loop.schedule(after: 0.01) {
                responder.write(text: "world")
                responder.finish()
            }
        }
        defer { harness.stop() }
        let client11 = try TestClient(port: harness.port)
        client11.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let r11 = try #require(client11.readResponse())
        #expect(r11.field("Transfer-Encoding") == "chunked" && r11.field("Content-Length") == nil)
        #expect(r11.text == "hello world")
        // Still open: a second request is served.
        client11.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client11.readResponse()?.text == "hello world")

        let client10 = try TestClient(port: harness.port)
        client10.send("GET / HTTP/1.0\r\n\r\n")
        let r10 = try #require(client10.readResponse())
        #expect(r10.statusLine == "HTTP/1.1 200 OK")
        #expect(r10.field("Transfer-Encoding") == nil && r10.field("Connection") == "close")
        #expect(r10.text == "hello world")
        #expect(harness.wait { log.completions == [true, true, true] })
    }

    /// `lastField` (the gateway's request id) goes out after the other fields, whole and
    /// streamed answers alike, and a transport that keeps heads sees it in `flattened`.
    @Test func lastFieldIsWrittenAfterTheFields() throws {
        let harness = try HTTP1ServerHarness { exchange in
            exchange.responder.fields.append("A", "1")
            exchange.responder.lastField = ("X-Request-Id", "abc123")
            if exchange.head.target == "/stream" {
                exchange.responder.startStreaming(status: 200, bodyLength: 2)
                exchange.responder.write(text: "ok")
                exchange.responder.finish()
            } else {
                exchange.responder.respond(status: 200, body: Array("ok".utf8))
            }
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET /whole HTTP/1.1\r\nHost: x\r\n\r\nGET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in 0..<2 {
            let response = try #require(client.readResponse())
            let names = response.fields.map { $0.name }
            #expect(response.field("X-Request-Id") == "abc123" && response.text == "ok")
            #expect(names.firstIndex(of: "A")! < names.firstIndex(of: "X-Request-Id")!)
            #expect(names.filter { $0 == "X-Request-Id" }.count == 1)
        }
        let head = HTTPResponseHead(status: 200, lastField: ("X-Request-Id", "abc123"))
        #expect(head.flattened.fields.first("X-Request-Id") == "abc123")
    }

    @Test func streamedResponseWithContentLengthPassesTheBodyAsIs() throws {
        let harness = try HTTP1ServerHarness { exchange in
            exchange.responder.fields.append("Content-Length", "5")
            exchange.responder.startStreaming(status: 200)
            exchange.responder.write(text: "abcde")
            exchange.responder.finish()
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in 0..<2 {
            let response = try #require(client.readResponse())
            #expect(response.field("Content-Length") == "5" && response.field("Transfer-Encoding") == nil)
            #expect(response.text == "abcde")
        }
    }

    @Test func headAnd204And304CarryNoBody() throws {
        let harness = try HTTP1ServerHarness { exchange in
            let status = exchange.head.target == "/204" ? 204 : exchange.head.target == "/304" ? 304 : 200
            exchange.responder.respond(status: status, body: Array("body".utf8))
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send(
            "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /204 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /304 HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try #require(client.readResponse(bodyless: true))
        #expect(head.status == 200 && head.field("Content-Length") == "4")
        let noContent = try #require(client.readResponse())
        #expect(noContent.status == 204 && noContent.field("Content-Length") == nil)
        let notModified = try #require(client.readResponse())
        #expect(notModified.status == 304)
        // The next response starts right after the bodiless ones: no stray body bytes.
        let get = try #require(client.readResponse())
        #expect(get.status == 200 && get.text == "body")
    }

    @Test func streamedResponseWaitsForTheOutputToDrain() throws {
        let chunk = String(repeating: "x", count: 64 << 10)
        var maxPending = 0
        let harness = try HTTP1ServerHarness { exchange in
            let responder = exchange.responder
            var left = 64
            func next() {
                guard left > 0 else { return responder.finish() }
                left -= 1
                maxPending = max(maxPending, responder.pendingOutput)
                // The producer writes the next chunk only once the output is written out.
                responder.write(text: chunk) { next() }
            }
            responder.startStreaming(status: 200)
            next()
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)  // the socket buffers fill: the server waits on EAGAIN
        let response = try #require(client.readResponse())
        #expect(response.body.count == 64 * (64 << 10))
        #expect(harness.onLoop { maxPending } <= 2 * (64 << 10))
    }

    /// An exchange its connection has moved past is inert: its body is gone and an answer
    /// through it reaches nobody, so a late call (a responder that outlived its request)
    /// cannot take the next request's body or write into the next answer.
    @Test func anExchangeTheConnectionMovedPastIsInert() throws {
        var exchanges: [ServerExchange] = []
        var lateBody: Result<[UInt8], RequestBodyFailure>?
        var secondBody: Result<[UInt8], RequestBodyFailure>?
        let harness = try HTTP1ServerHarness { exchange in
            exchanges.append(exchange)
            guard exchanges.count == 2 else {
                return exchange.responder.respond(status: 200, body: Array(exchange.head.target.utf8))
            }
            // The second request: the first exchange, answered and written, is called again.
            guard let first = exchanges[0].body as? HTTP1ServerExchange else {
                Issue.record("the HTTP/1.1 engine's request body is its exchange")
                return exchange.responder.respond(status: 500)
            }
            #expect(!first.isConnected)
            first.collect(limit: 1 << 10) { lateBody = $0 }
            first.sendResponse(HTTPResponseHead(status: 500), body: Array("stray".utf8), close: true)
            first.startResponse(HTTPResponseHead(status: 500), close: true)
            first.sendBody(ByteQueue("stray").chunk)
            first.endResponse()
            exchange.body.collect(limit: 1 << 10) { result in
                secondBody = result
                exchange.responder.respond(status: 200, body: (try? result.get()) ?? [])
            }
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.text == "/1")
        client.send("POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        let second = try #require(client.readResponse())
        #expect(second.status == 200 && second.text == "hello")
        // Nothing stray between the answers: the next one follows at once, on the same
        // connection.
        client.send("GET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.text == "/3")
        #expect(harness.onLoop { lateBody.map { if case .failure(.clientGone) = $0 { true } else { false } } } == true)
        #expect(harness.onLoop { secondBody.map { (try? $0.get()) == Array("hello".utf8) } } == true)
    }

    @Test func dateIsIMFFixdate() {
        #expect(HTTPDateCache.imfFixdate(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        var now = 784_111_777
        let cache = HTTPDateCache { now }
        let first = cache.fieldLine
        now += 1
        #expect(cache.fieldLine != first)
        #expect(String(decoding: first, as: UTF8.self) == "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n")
    }
}
