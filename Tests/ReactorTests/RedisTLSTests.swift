import Foundation
import TestSupport
import Testing

@testable import Reactor

/// `rediss://` against a real redis-server with TLS only (`--port 0 --tls-port`), its
/// certificate from a throwaway CA made per test: the certificate chain and the name are
/// checked, refusals end quickly in `.unavailable`, AUTH and SELECT go over TLS.
@Suite("Redis over TLS (rediss://) on a real redis-server", .serialized)
struct RedisTLSTests {
    let h = RedisLoopHarness()

    private func client(_ url: String, connectTimeout: Double = 2) throws -> RedisClient {
        RedisClient(
            loop: h.loop, endpoint: try #require(RedisEndpoint(url: url)), connectTimeout: connectTimeout,
            commandTimeout: 2)
    }

    /// A refusal within this bound is "no hang": well under the 2 s connect timeout.
    private func expectRefused(_ c: RedisClient, _ why: String) {
        let started = Date()
        guard case .failure(let e)? = h.send(c, ["PING"], limit: 5) else {
            Issue.record("must fail: \(why)")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains(why), "\(e.message)")
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(!c.isConnected)
    }

    @Test func worksWithTheCAFile() throws {
        let pki = try RedisTLSFiles()
        let server = try RedisServerProcess(arguments: pki.serverArguments)
        let c = try client("rediss://127.0.0.1:\(server.port)/2?ca_file=\(pki.caFile)")
        #expect(h.send(c, ["SET", "k", "over tls"]) == .success(.status("OK")))
        #expect(c.isConnected)
        #expect(h.send(c, ["GET", "k"]) == .success(.bulk("over tls")))
        // SELECT 2 went over TLS too; 1000 pipelined replies cross TLS records in order.
        let info = try #require(try h.send(c, ["CLIENT", "INFO"])?.get().text)
        #expect(info.contains(" db=2 "))
        let echoes = h.sendAll(c, (0..<1000).map { ["ECHO", String(repeating: "x", count: $0)] })
        #expect(echoes == (0..<1000).map { .success(.bulk(String(repeating: "x", count: $0))) })

        // A name in the certificate (DNS:localhost) checked instead of the address.
        let named = try client("rediss://127.0.0.1:\(server.port)?ca_file=\(pki.caFile)&server_name=localhost")
        #expect(h.send(named, ["PING"]) == .success(.status("PONG")))
        // The same through the deployment entry point.
        let url = "rediss://127.0.0.1:\(server.port)/2?ca_file=\(pki.caFile)"
        let redis = Redis(loop: h.loop, deployment: try #require(RedisDeployment(url: url)))
        #expect(h.send(redis, ["GET", "k"]) == .success(.bulk("over tls")))
    }

    @Test func anotherCAIsRefused() throws {
        let pki = try RedisTLSFiles()
        let server = try RedisServerProcess(arguments: pki.serverArguments)
        expectRefused(
            try client("rediss://127.0.0.1:\(server.port)?ca_file=\(pki.otherCAFile)"), "certificate verify failed")
        // Nor does the system's trust store know the throwaway CA.
        expectRefused(try client("rediss://127.0.0.1:\(server.port)"), "certificate verify failed")
    }

    @Test func aNameNotInTheCertificateIsRefused() throws {
        let pki = try RedisTLSFiles()
        let server = try RedisServerProcess(arguments: pki.serverArguments)
        expectRefused(
            try client("rediss://127.0.0.1:\(server.port)?ca_file=\(pki.caFile)&server_name=redis.example.com"),
            "hostname mismatch")
        // An address the certificate does not list (it has 127.0.0.1 only).
        expectRefused(
            try client("rediss://localhost:\(server.port)?ca_file=\(pki.caFile)&server_name=127.0.0.2"),
            "IP address mismatch")
    }

    @Test func insecureSkipTLSVerifyAcceptsAnyCertificate() throws {
        let pki = try RedisTLSFiles()
        let server = try RedisServerProcess(arguments: pki.serverArguments)
        let c = try client(
            "rediss://127.0.0.1:\(server.port)?ca_file=\(pki.otherCAFile)&server_name=wrong.example&insecure_skip_verify=true"
        )
        #expect(h.send(c, ["PING"]) == .success(.status("PONG")))
    }

    @Test func authOverTLS() throws {
        let pki = try RedisTLSFiles()
        let server = try RedisServerProcess { pki.serverArguments(port: $0) + ["--requirepass", "tls-pw"] }
        let good = try client("rediss://:tls-pw@127.0.0.1:\(server.port)?ca_file=\(pki.caFile)")
        #expect(h.send(good, ["SET", "a", "1"]) == .success(.status("OK")))
        #expect(h.send(good, ["ACL", "WHOAMI"]) == .success(.bulk("default")))
        let wrong = try client("rediss://:not-it@127.0.0.1:\(server.port)?ca_file=\(pki.caFile)")
        guard case .failure(let e)? = h.send(wrong, ["GET", "a"]) else {
            Issue.record("wrong password must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains("AUTH rejected"))
        #expect(!e.message.contains("not-it"))
    }

    @Test func plainServerOrMissingCAFileFailsQuickly() throws {
        let plain = try RedisServerProcess()
        // The server takes the ClientHello for the start of an inline command and waits for
        // its end: the connect timeout ends the handshake.
        let tlsToPlain = try client("rediss://127.0.0.1:\(plain.port)?insecure_skip_verify=true", connectTimeout: 0.3)
        let started = Date()
        guard case .failure(let e)? = h.send(tlsToPlain, ["PING"], limit: 5) else {
            Issue.record("must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains("no connection and handshake within"))
        #expect(Date().timeIntervalSince(started) < 1.5)

        let missing = try client("rediss://127.0.0.1:\(plain.port)?ca_file=/nonexistent/ca.pem")
        expectRefused(missing, "cannot load ca_file")
    }
}
