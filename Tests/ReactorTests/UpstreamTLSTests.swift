import Foundation
import TestSupport
import Testing

@testable import Reactor

/// HTTPS upstreams: `UpstreamCall` through a TLS pool to this engine's own TLS server
/// (`HTTPServer` with a `TLSContext`) holding a certificate for 127.0.0.1 and localhost
/// from a throwaway CA. The handshake, verification failures and their reasons, keep-alive
/// over one TLS connection, session resumption, and bodies larger than a TLS record.
@Suite("UpstreamPool: HTTPS", .serialized)
struct UpstreamTLSTests {
    let pki: RedisTLSFiles
    let serverTLS: TLSContext

    init() throws {
        pki = try RedisTLSFiles()
        serverTLS = try TLSContext(certificateFile: pki.certFile, privateKeyFile: pki.keyFile)
    }

    private func context(name: String = "127.0.0.1", ca: String? = nil, insecure: Bool = false) throws
        -> UpstreamTLSContext
    {
        try UpstreamTLSContext(
            serverName: name, caFile: insecure ? nil : (ca ?? pki.caFile), certFile: nil, keyFile: nil,
            insecureSkipTLSVerify: insecure)
    }

    @Test func keepAliveOverOneVerifiedConnection() throws {
        let log = ExchangeLog()
        let server = try HTTP1ServerHarness(tls: serverTLS, handler: HTTP1ServerTests.echoTarget(log))
        defer { server.stop() }
        let h = UpstreamHarness(port: server.port, tls: try context())
        for i in 1...3 {
            let r = h.call(.GET, "/\(i)")
            #expect(r.events == ["head 200", "body", "complete"])
            #expect(r.bodyText == "GET /\(i)")
        }
        #expect(h.pool.tlsHandshakes == 1 && h.pool.openConnections == 1 && h.pool.idleCount == 1)
        #expect(
            server.onLoop {
                log.connections.count == 3 && log.connections.allSatisfy { $0 === log.connections[0] && $0.isTLS }
            })
    }

    @Test func aNewConnectionResumesTheSession() throws {
        let log = ExchangeLog()
        let server = try HTTP1ServerHarness(tls: serverTLS, handler: HTTP1ServerTests.echoTarget(log))
        defer { server.stop() }
        let h = UpstreamHarness(port: server.port, host: "localhost", tls: try context(name: "localhost"))
        #expect(h.call().completed)
        h.pool.closeIdle()
        #expect(h.call().completed)
        #expect(h.pool.tlsHandshakes == 2)
        #expect(h.pool.tlsResumedHandshakes == 1)
    }

    @Test func wrongCAFailsWithTheVerifyError() throws {
        let server = try HTTP1ServerHarness(tls: serverTLS, handler: HTTP1ServerTests.echoTarget(ExchangeLog()))
        defer { server.stop() }
        let h = UpstreamHarness(port: server.port, tls: try context(ca: pki.otherCAFile))
        let r = h.call()
        guard case .tlsHandshakeFailed(let reason)? = r.failure else {
            Issue.record("expected a TLS handshake failure, got \(String(describing: r.failure))")
            return
        }
        #expect(reason.contains("certificate verify failed: unable to get local issuer certificate"))
        #expect(r.failedAfterHead == false)
        #expect(h.pool.openConnections == 0 && h.pool.tlsHandshakes == 0)
    }

    @Test func wrongNameFailsAndInsecureSkipVerifyDoesNotCheck() throws {
        let server = try HTTP1ServerHarness(tls: serverTLS, handler: HTTP1ServerTests.echoTarget(ExchangeLog()))
        defer { server.stop() }
        let wrong = UpstreamHarness(port: server.port, tls: try context(name: "elsewhere.test"))
        guard case .tlsHandshakeFailed(let reason)? = wrong.call().failure else {
            Issue.record("expected a TLS handshake failure")
            return
        }
        #expect(reason.contains("hostname mismatch"))
        let insecure = UpstreamHarness(port: server.port, tls: try context(name: "elsewhere.test", insecure: true))
        #expect(insecure.call().completed)
    }

    @Test func plainHTTPOnTheTLSPortFails() throws {
        let server = try HTTP1ServerHarness(tls: serverTLS, handler: HTTP1ServerTests.echoTarget(ExchangeLog()))
        defer { server.stop() }
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.completed == false && r.failure != nil)
    }

    @Test func largeBodiesBothWays() throws {
        let size = 3 << 20
        let server = try HTTP1ServerHarness(tls: serverTLS) { exchange in
            let sink = CollectingSink()
            sink.onEnd = { [sink] in exchange.responder.respond(status: 200, body: Array(sink.bytes.reversed())) }
            exchange.body.stream(to: sink)
        }
        defer { server.stop() }
        let h = UpstreamHarness(port: server.port, responseTimeout: 10, tls: try context())
        let payload = HTTP1ServerTLSTests.pattern(size)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .length(UInt64(size)),
            chunks: stride(from: 0, to: size, by: 100_000).map { Array(payload[$0..<min($0 + 100_000, size)]) },
            interval: 0.001)
        let r = h.call(.POST, "/big", body: body, limit: 20)
        #expect(
            r.completed,
            """
            \(String(describing: r.failure)); \(r.events.suffix(5)); \
            body delivered \(body.delivered), paused \(body.pauses) times
            """)
        #expect(r.body.count == size)
        #expect(firstDifference(r.body, Array(payload.reversed())) == nil)
    }
}
