import Foundation
import Glibc
import TestSupport
import Testing

@testable import Reactor

/// The HTTP/1.1 server on a TLS listener (`TLSConnectionIO`), against a blocking OpenSSL
/// client that trusts a throwaway CA: the handshake, keep-alive, pipelining, bodies both
/// ways larger than the connection's input bound and than one TLS record, close_notify, and
/// the refusals (plain text on the TLS port, a handshake that stalls).
@Suite("HTTP/1.1 server over TLS", .serialized)
struct HTTP1ServerTLSTests {
    let pki: RedisTLSFiles
    let tls: TLSContext

    init() throws {
        pki = try RedisTLSFiles()
        tls = try TLSContext(certificateFile: pki.certFile, privateKeyFile: pki.keyFile)
    }

    private func client(_ harness: HTTP1ServerHarness) throws -> TestClient {
        try TestClient(port: harness.port, caFile: pki.caFile)
    }

    /// Bytes 0..<count of a pattern a truncated or reordered body cannot match.
    static func pattern(_ count: Int, from start: Int = 0) -> [UInt8] {
        (start..<(start + count)).map { UInt8(truncatingIfNeeded: $0 % 251) }
    }

    @Test func handshakeThenGet() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(tls: tls, handler: HTTP1ServerTests.echoTarget(log))
        defer { harness.stop() }
        let client = try client(harness)
        client.send("GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.statusLine == "HTTP/1.1 200 OK")
        #expect(response.text == "GET /a?b=c")
        #expect(harness.wait { log.completions == [true] })
        #expect(harness.onLoop { log.connections.first.map { $0.isTLS && $0.peer == "127.0.0.1" } == true })
    }

    @Test func keepAliveThenCloseNotify() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(tls: tls, handler: HTTP1ServerTests.echoTarget(log))
        defer { harness.stop() }
        let client = try client(harness)
        for i in 1...3 {
            client.send("GET /\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(client.readResponse()?.text == "GET /\(i)")
        }
        #expect(
            harness.onLoop { log.connections.count == 3 && log.connections.allSatisfy { $0 === log.connections[0] } })
        client.send("GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(client.readResponse()?.field("Connection") == "close")
        #expect(client.closedByPeer())
        // The server ended the session properly: a truncation would look different.
        #expect(client.tls?.receivedCloseNotify == true)
        #expect(harness.wait { harness.server?.openConnections == 0 })
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let log = ExchangeLog()
        let loop = EventLoop()
        let harness = try HTTP1ServerHarness(loop: loop, tls: tls) { exchange in
            log.record(exchange)
            let target = exchange.head.target
            loop.schedule(after: 0.002) { exchange.responder.respond(status: 200, body: Array(target.utf8)) }
        }
        defer { harness.stop() }
        let client = try client(harness)
        // 100 requests of 1.5 KB in one write: several share a TLS record, and they wait in
        // the engine's input (64 KB at most) and in OpenSSL (a record read in part, which
        // no socket event announces) while each is answered in turn.
        let pad = String(repeating: "p", count: 1500)
        client.send((1...100).map { "GET /\($0) HTTP/1.1\r\nHost: x\r\nX-Pad: \(pad)\r\n\r\n" }.joined())
        let bodies = (1...100).compactMap { _ in client.readResponse()?.text }
        #expect(bodies == (1...100).map { "/\($0)" })
        #expect(harness.wait { log.completions.count == 100 })
    }

    @Test func largeStreamedResponseWithBackpressure() throws {
        let chunkSize = 64 << 10
        let chunks = 64  // 4 MB
        let harness = try HTTP1ServerHarness(tls: tls) { exchange in
            exchange.responder.startStreaming(status: 200)
            Self.stream(exchange.responder, chunk: 0, of: chunks, size: chunkSize)
        }
        defer { harness.stop() }
        let client = try client(harness)
        client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try #require(client.readResponse())
        #expect(response.field("Transfer-Encoding") == "chunked")
        #expect(response.body.count == chunkSize * chunks)
        #expect(firstDifference(response.body, Self.pattern(chunkSize * chunks)) == nil)
        // The connection is still good for another request.
        client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.body.count == chunkSize * chunks)
    }

    /// Writes chunk `index` and the next one only once it is written out.
    static func stream(_ responder: Responder, chunk index: Int, of count: Int, size: Int) {
        guard index < count else {
            responder.finish()
            return
        }
        let buffer = ByteQueue(pattern(size, from: index * size))
        withExtendedLifetime(buffer) {
            responder.write(buffer.chunk) { stream(responder, chunk: index + 1, of: count, size: size) }
        }
    }

    @Test func largeUploadEchoedBack() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(tls: tls, handler: HTTP1ServerBodyTests.echoBody(log, limit: 4 << 20))
        defer { harness.stop() }
        let client = try client(harness)
        // 1 MB: 64 records and many times the connection's 64 KB input bound.
        let body = Self.pattern(1 << 20)
        client.send(Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        let response = try #require(client.readResponse())
        #expect(response.status == 200)
        #expect(firstDifference(response.body, body) == nil)
        client.send(HTTP1ServerBodyTests.chunkedHello)
        #expect(client.readResponse()?.text == "hello world")
    }

    @Test func plainTextClientOnTheTLSPortIsClosed() throws {
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(tls: tls, handler: HTTP1ServerTests.echoTarget(log))
        defer { harness.stop() }
        let plain = try TestClient(port: harness.port)
        let started = Date()
        plain.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = plain.readToEnd()
        // At most a TLS alert record, never an HTTP answer; then an end or a reset (the
        // request's bytes were never read), well before the client's 5 s timeout.
        #expect(!String(decoding: answer, as: UTF8.self).contains("HTTP/"))
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(harness.wait { harness.server?.openConnections == 0 })
        #expect(harness.onLoop { log.heads.isEmpty })
    }

    @Test func stalledHandshakeIsClosedByTheHeaderTimeout() throws {
        var options = HTTPServerOptions()
        options.headerTimeout = 0.3
        let log = ExchangeLog()
        let harness = try HTTP1ServerHarness(options: options, tls: tls, handler: HTTP1ServerTests.echoTarget(log))
        defer { harness.stop() }
        let started = Date()
        // A TLS record header announcing a ClientHello whose bytes never come.
        let stalled = try TestClient(port: harness.port)
        stalled.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        // And one that connects and says nothing at all.
        let silent = try TestClient(port: harness.port)
        #expect(stalled.readToEnd().isEmpty && stalled.sawEOF)
        #expect(silent.closedByPeer())
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(harness.wait { harness.server?.openConnections == 0 })
        // The listener still serves a real client.
        let client = try client(harness)
        client.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readResponse()?.text == "GET /ok")
        #expect(harness.onLoop { log.heads.count == 1 })
    }
}
