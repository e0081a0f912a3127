import Foundation
import Testing

@testable import Reactor

/// The async IdP client against a real HTTP server (Reactor's own, on 127.0.0.1) on the same
/// loop: nothing blocks, so both sides make progress.
@Suite("HTTPFetcher: curl multi on the libevent loop")
struct HTTPFetcherTests {
    final class Harness {
        let loop = EventLoop()
        var server: HTTPServer!
        var port: UInt16 = 0
        var pending: [ServerExchange] = []

        init(_ handler: @escaping (Harness, ServerExchange) -> Void) throws {
            server = HTTPServer(loop: loop, options: HTTPServerOptions(), tls: nil) { [unowned self] req in
                handler(self, req)
            }
            // Port 0: the kernel picks a free one; read it back.
            let fd = try Listener.open(host: "127.0.0.1", port: 0)
            port = Listener.port(of: fd)
            try server.serve(listeningSocket: fd)
        }

        /// Runs the loop until `done` is set or `limit` seconds pass.
        func run(
            limit: Double = 5, _ start: (HTTPFetcher, @escaping (Result<FetchResponse, FetchError>) -> Void) -> Void
        ) -> Result<FetchResponse, FetchError>? {
            let fetcher = HTTPFetcher(loop: loop)
            var result: Result<FetchResponse, FetchError>?
            start(fetcher) { [loop] r in
                result = r
                loop.stop()
            }
            loop.schedule(after: limit) { [loop] in loop.stop() }
            loop.run()
            return result
        }
    }

    @Test func publicOnlyRefusesEveryPrivateAndSpecialAddress() {
        let policy = FetchSettings.AddressPolicy.publicOnly
        for ip in [
            "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.5", "::1", "::", "fe80::1", "fc00::1",
            "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a9fe:a9fe", "::ffff:0:a9fe:a9fe", "2002:7f00:1::1",
            "2001:db8::1", "not an address"
        ] {
            #expect(!policy.admits(ip), "\(ip)")
        }
        for ip in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:93.184.216.34"] {
            #expect(policy.admits(ip), "\(ip)")
        }
        #expect(FetchSettings.AddressPolicy.publicOrLoopback.admits("127.0.0.1"))
        #expect(FetchSettings.AddressPolicy.publicOrLoopback.admits("::1"))
        #expect(!FetchSettings.AddressPolicy.publicOrLoopback.admits("10.0.0.1"))
    }

    @Test func publicOnlyDoesNotConnectToALoopbackServer() throws {
        var served = 0
        let h = try Harness { _, req in
            served += 1
            req.responder.respond(status: 200, body: Array("{}".utf8))
        }
        var strict = FetchSettings()
        strict.addresses = .publicOnly
        let strictFetcher = HTTPFetcher(loop: h.loop, settings: strict)
        let r = h.run { _, done in
            strictFetcher.fetch(FetchRequest(url: "http://127.0.0.1:\(h.port)/doc.json", timeout: 2), completion: done)
        }
        guard case .failure? = r else {
            Issue.record("fetched from a loopback address: \(String(describing: r))")
            return
        }
        #expect(served == 0)
        // The development exception lets it through.
        var dev = FetchSettings()
        dev.addresses = .publicOrLoopback
        let devFetcher = HTTPFetcher(loop: h.loop, settings: dev)
        let allowed = h.run { _, done in
            devFetcher.fetch(FetchRequest(url: "http://127.0.0.1:\(h.port)/doc.json", timeout: 2), completion: done)
        }
        #expect((try? allowed?.get())?.status == 200 && served == 1)
    }

    @Test func getReturnsStatusHeadersAndBody() throws {
        let h = try Harness { _, req in
            req.responder.fields.append("Cache-Control", "max-age=300")
            req.responder.respond(status: 200, body: Array(("{\"keys\":[]}").utf8))
        }
        let r = h.run { f, done in f.fetch(FetchRequest(url: "http://127.0.0.1:\(h.port)/jwks"), completion: done) }
        let resp = try #require(try r?.get())
        #expect(resp.status == 200)
        #expect(String(decoding: resp.body, as: UTF8.self) == "{\"keys\":[]}")
        #expect(resp.header("Cache-Control") == "max-age=300")
    }

    @Test func postSendsBodyAndHeaders() throws {
        let h = try Harness { _, req in
            let ct = req.head.fields.first("Content-Type") ?? "-"
            req.body.collect(limit: 1 << 20) { body in
                req.responder.respond(
                    status: 201, body: Array("\(req.head.methodName) \((try? body.get())?.count ?? -1) \(ct)".utf8))
            }
        }
        let r = h.run { f, done in
            f.fetch(
                FetchRequest(
                    url: "http://127.0.0.1:\(h.port)/token", body: Array("grant_type=x".utf8),
                    headers: ["Content-Type: application/x-www-form-urlencoded"]), completion: done)
        }
        let resp = try #require(try r?.get())
        #expect(resp.status == 201)
        #expect(String(decoding: resp.body, as: UTF8.self) == "POST 12 application/x-www-form-urlencoded")
    }

    @Test func timeoutFailsInsteadOfHanging() throws {
        let h = try Harness { h, req in h.pending.append(req) }  // never answers
        let started = Date()
        let r = h.run(limit: 5) { f, done in
            f.fetch(FetchRequest(url: "http://127.0.0.1:\(h.port)/slow", timeout: 0.3), completion: done)
        }
        #expect(throws: FetchError.self) { try r?.get() }
        #expect(r != nil)
        if case .failure(let e)? = r { #expect(e.kind == .transfer) }
        #expect(Date().timeIntervalSince(started) < 3)
        // The server never answered; every request is still answered once (a Responder
        // dropped unanswered is a bug it asserts on).
        for ex in h.pending { ex.responder.abort() }
    }

    @Test func oversizedResponseFails() throws {
        let h = try Harness { _, req in
            req.responder.respond(status: 200, body: Array((String(repeating: "x", count: 70_000)).utf8))
        }
        let r = h.run { f, done in
            f.fetch(FetchRequest(url: "http://127.0.0.1:\(h.port)/big", maxResponseBytes: 65_536), completion: done)
        }
        guard case .failure(let e)? = r else {
            Issue.record("expected failure")
            return
        }
        #expect(e.description.contains("larger than"))
        #expect(e.kind == .responseTooLarge)
    }

    @Test func onlyHTTPSchemes() throws {
        let h = try Harness { _, req in req.responder.respond(status: 200) }
        let r = h.run { f, done in f.fetch(FetchRequest(url: "file:///etc/passwd"), completion: done) }
        guard case .failure? = r else {
            Issue.record("file:// must be refused")
            return
        }
    }

    @Test func connectionRefusedFails() throws {
        let h = try Harness { _, req in req.responder.respond(status: 200) }
        let r = h.run { f, done in
            f.fetch(FetchRequest(url: "http://127.0.0.1:1/x", connectTimeout: 1), completion: done)
        }
        guard case .failure? = r else {
            Issue.record("expected failure")
            return
        }
    }
}
