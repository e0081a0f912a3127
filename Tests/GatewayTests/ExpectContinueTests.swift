import Foundation
import TestSupport
import Testing

@testable import Gateway
@testable import Reactor

/// `Expect: 100-continue` through the worker (RFC 9110 §10.1.1), over the in-memory transport
/// to a scripted upstream: a proxied request's 100 is the upstream's (relayed), a final answer
/// first goes to the client with its body never read, a silent upstream gets the body after
/// `limits.continue_timeout`; bodies the gateway reads itself get the gateway's 100.
@Suite("Worker: 100-continue decided by the upstream", .serialized)
struct ExpectContinueTests {
    static func worker(upstreamPort: UInt16, limits: String = "{}") throws -> Worker {
        try testWorker(
            """
            listen: 127.0.0.1:1
            admin_listen: "off"
            workers: 1
            limits: \(limits)
            issuers:
              one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
            upstreams:
              app: { url: "http://127.0.0.1:\(upstreamPort)", timeout: 5s }
            routes:
              - name: form
                match: { path_prefix: /form/ }
                upstream: app
                auth: bearer
                issuers: [one]
                token_in_body: true
              - name: open
                match: { path_prefix: / }
                upstream: app
                auth: none
            """)
    }

    static let fields: [(name: String, value: String)] = [
        ("Host", "a"), ("Content-Length", "5"), ("Expect", "100-continue")
    ]

    /// Handles one request and runs the worker's loop until it is answered (10 s at most).
    func exchange(
        _ w: Worker, _ target: String, fields: [(name: String, value: String)] = Self.fields,
        body: [UInt8] = Array("hello".utf8), version: (major: Int, minor: Int) = (1, 1)
    ) -> InMemoryTransport {
        let (exchange, t) = InMemoryTransport.exchange("POST", target, fields: fields, body: body, version: version)
        let loop = w.loop
        let limit = LoopTimer(loop: loop, seconds: 10) { loop.stop() }
        let poll = LoopTimer(loop: loop, seconds: 0.01, repeating: true) {
            if t.ended || t.aborted { loop.stop() }
        }
        loop.execute { w.handle(exchange) }
        loop.run()
        poll.cancel()
        limit.cancel()
        return t
    }

    static func request(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func theUpstreams100IsRelayedThenTheBodyStreams() throws {
        let upstream = try ScriptedUpstream([
            [
                .readHead, .send("HTTP/1.1 100 Continue\r\n\r\n"), .readBytes(5),
                .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            ]
        ])
        let w = try Self.worker(upstreamPort: upstream.port)
        let t = exchange(w, "/up")
        #expect(t.status == 200 && t.bodyText == "ok")
        #expect(t.interim.map(\.status) == [100], "exactly one 100, the upstream's")
        #expect(t.bodyRead)
        let head = Self.request(try #require(upstream.requests.first))
        #expect(head.contains("\r\nExpect: 100-continue\r\n"))
        #expect(upstream.requestTexts.last == "hello")
    }

    @Test(arguments: [417, 413])
    func aFinalAnswerBefore100IsRelayedAndTheBodyNeverRead(status: Int) throws {
        let upstream = try ScriptedUpstream([
            [.readHead, .send("HTTP/1.1 \(status) No\r\nContent-Length: 2\r\n\r\nno"), .expectClose]
        ])
        let w = try Self.worker(upstreamPort: upstream.port)
        let t = exchange(w, "/up")
        #expect(t.status == status && t.bodyText == "no")
        #expect(t.interim.isEmpty && !t.bodyRead, "the client was never told to send its body")
        #expect(upstream.requests.count == 1)
        _ = upstream.finished.wait(timeout: .now() + 5)
        #expect(upstream.clientClosed == [true], "the upstream's connection, owed a body, is closed")
    }

    @Test func aSilentUpstreamGetsTheBodyAfterTheTimeout() throws {
        let upstream = try ScriptedUpstream([
            [.readHead, .readBytes(5), .send("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")]
        ])
        let w = try Self.worker(upstreamPort: upstream.port)
        let t = exchange(w, "/up")
        #expect(t.status == 201)
        #expect(t.interim.map(\.status) == [100], "the gateway's own 100, once the wait is over")
        #expect(upstream.requestTexts.last == "hello")
    }

    /// `continue_timeout: 0`: the upstream is not asked; the gateway says 100 as the body
    /// streams, and the body goes with the head.
    @Test func aZeroContinueTimeoutNeverAsksTheUpstream() throws {
        let upstream = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]
        ])
        let w = try Self.worker(upstreamPort: upstream.port, limits: "{ continue_timeout: 0s }")
        let t = exchange(w, "/up")
        #expect(t.status == 200 && t.interim.map(\.status) == [100])
        let sent = try #require(upstream.requestTexts.first)
        #expect(!sent.lowercased().contains("expect") && sent.hasSuffix("\r\n\r\nhello"))
    }

    @Test func continueTimeoutIsParsedAndBounded() throws {
        func parse(_ limits: String) -> Result<GatewayConfig, ConfigError> {
            let yaml = """
                listen: 127.0.0.1:1
                limits: \(limits)
                upstreams: { app: { url: "http://127.0.0.1:2" } }
                routes: [{ match: { path_prefix: / }, upstream: app, auth: none }]
                """
            return ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1)
        }
        #expect(try parse("{}").get().limits.continueTimeout == 1)
        #expect(try parse("{ continue_timeout: 250ms }").get().limits.continueTimeout == 0.25)
        #expect(try parse("{ continue_timeout: 0 }").get().limits.continueTimeout == 0)
        guard case .failure(let e) = parse("{ continue_timeout: 31s }") else {
            Issue.record("31s must be refused")
            return
        }
        #expect(
            e.problems.map(\.description) == [
                "line 2: limits.continue_timeout: must be at most 30s (e.g. 1s; 0 answers 100 at once without"
                    + " asking the upstream)"
            ])
        guard case .failure(let soon) = parse("{ continue_timeout: soon }") else {
            Issue.record("a non-duration must be refused")
            return
        }
        #expect(soon.problems.map(\.description).first?.contains("limits.continue_timeout") == true)
    }

    /// No Expect to honour: an HTTP/1.0 client's is ignored, and the body goes with the head.
    @Test func anHTTP10ClientsExpectIsIgnored() throws {
        let upstream = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]
        ])
        let w = try Self.worker(upstreamPort: upstream.port)
        let t = exchange(w, "/up", version: (1, 0))
        #expect(t.status == 200 && t.interim.isEmpty)
        let sent = try #require(upstream.requestTexts.first)
        #expect(!sent.lowercased().contains("expect") && sent.hasSuffix("\r\n\r\nhello"))
    }

    /// A body the gateway reads itself (RFC 6750 §2.2 form token) gets the gateway's 100 as it
    /// is read; the token is judged on it, and nothing reaches the upstream.
    @Test func aFormTokenBodyGetsTheGateways100() throws {
        let upstream = try ScriptedUpstream([])
        let w = try Self.worker(upstreamPort: upstream.port)
        let form = Array("access_token=abc".utf8)
        let t = exchange(
            w, "/form/x",
            fields: [
                ("Host", "a"), ("Content-Type", "application/x-www-form-urlencoded"),
                ("Content-Length", "\(form.count)"), ("Expect", "100-continue")
            ], body: form)
        #expect(t.bodyRead && t.interim.map(\.status) == [100])
        #expect(t.status == 401)
        #expect(upstream.accepted == 0)
    }
}
