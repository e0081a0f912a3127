import Foundation
import Testing

@testable import Reactor

/// The HTTP/1.1 server against clients that misbehave: refusals, deadlines, disconnects
/// and the connection cap.
@Suite("HTTP/1.1 server: refusals, deadlines and limits", .serialized)
struct HTTP1ServerLimitsTests {
    @Test func smugglingShapedRequestIsRefusedAndClosed() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness { exchange in
            log.record(exchange)
            exchange.responder.respond(status: 200)
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.status == 400)
        #expect(response.field("Connection") == "close")
        #expect(response.field("Content-Type") == "application/json")
        #expect(response.text == #"{"error":"invalid_request","error_description":"invalid message framing"}"#)
        #expect(client.readToEnd().isEmpty)
        #expect(client.sawEOF)
        #expect(harness.onLoop { log.heads.isEmpty })
    }

    @Test func headerTimeoutAnswers408AndCloses() throws {
        var options = HTTPServerOptions()
        options.headerTimeout = 0.2
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(options: options) { exchange in
            log.record(exchange)
            exchange.responder.respond(status: 200)
        }
        defer { harness.stop() }
        let slow = try TestClient(port: harness.port)
        slow.send("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        let started = Date()
        let response = try #require(slow.readResponse())
        #expect(response.status == 408 && response.field("Connection") == "close")
        #expect(slow.closedByPeer())
        #expect(Date().timeIntervalSince(started) < 3)
        // On keep-alive too: from the first byte of the second head.
        let second = try TestClient(port: harness.port)
        second.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(second.readResponse()?.status == 200)
        second.send("GET / HTTP/1.1\r\n")
        #expect(second.readResponse()?.status == 408)
        #expect(harness.onLoop { log.heads.count == 1 })
    }

    @Test func silentConnectionsAndIdleKeepAliveCloseWithoutAnswer() throws {
        var options = HTTPServerOptions()
        options.headerTimeout = 0.2
        options.idleTimeout = 0.2
        let harness = try HTTP1ServerHarness(options: options) { $0.responder.respond(status: 204) }
        defer { harness.stop() }
        let silent = try TestClient(port: harness.port)
        #expect(silent.closedByPeer())
        let idle = try TestClient(port: harness.port)
        idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(idle.readResponse()?.status == 204)
        #expect(idle.closedByPeer())
        #expect(harness.wait { harness.server?.openConnections == 0 })
    }

    @Test func bodyTimeoutFailsTheBodyAndCloses() throws {
        var options = HTTPServerOptions()
        options.bodyTimeout = 0.2
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(options: options) { exchange in
            log.record(exchange)
            exchange.body.collect(limit: 100) { result in
                log.bodyResults.append(result)
                exchange.responder.respond(status: 408)
            }
        }
        defer { harness.stop() }
        let client = try TestClient(port: harness.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        #expect(client.readResponse()?.status == 408)
        #expect(client.closedByPeer())
        #expect(harness.wait { log.bodyResults.count == 1 && log.completions.count == 1 })
        #expect(harness.onLoop { log.bodyResults == [.failure(.timeout)] })
    }

    @Test func clientDisconnectMidResponseReachesTheResponder() throws {
        let log = ExchangeLog()
        log.onClientGone = { $0.abort() }
        let harness = try HTTP1ServerHarness { exchange in
            log.record(exchange)
            let responder = exchange.responder
            responder.startStreaming(status: 200)
            responder.write(text: "partial")
            // Never finished: the client leaves first.
        }
        defer { harness.stop() }
        do {
            let client = try TestClient(port: harness.port)
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(harness.wait { log.heads.count == 1 })
            usleep(20_000)
        }
        #expect(harness.wait { log.clientGone == 1 && log.completions == [false] })
        #expect(harness.wait { harness.server?.openConnections == 0 })
    }

    @Test func maxConnectionsPausesAcceptingUntilOneCloses() throws {
        var options = HTTPServerOptions()
        options.maxConnections = 2
        let harness = try HTTP1ServerHarness(options: options) { $0.responder.respond(status: 200) }
        defer { harness.stop() }
        var first: TestClient? = try TestClient(port: harness.port)
        let second = try TestClient(port: harness.port)
        // Both in the middle of a head: none idle, so none is reclaimed (see
        // HTTP1ServerReclaimTests for idle ones).
        for client in [first!, second] { client.send("GET / HTTP/1.1\r\n") }
        #expect(harness.wait { harness.server!.openConnections == 2 && harness.server!.idleConnections == 0 })
        // The kernel completes the third handshake, but the server does not take it.
        let third = try TestClient(port: harness.port, timeout: 0.3)
        third.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(third.readResponse() == nil && !third.sawEOF)
        #expect(harness.onLoop { harness.server!.acceptPauses == 1 && harness.server!.openConnections == 2 })
        first = nil
        third.setTimeout(5)
        #expect(third.readResponse()?.status == 200)
        #expect(harness.onLoop { harness.server!.openConnections == 2 })
        _ = first
    }
}
