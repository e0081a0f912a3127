import Foundation
import Logging
import Testing

@testable import Gateway
@testable import Reactor

/// A worker judged without sockets: requests come in through the in-memory transport and
/// every answer is read back from it. What is decided on the head (routing, path rules,
/// credentials) is answered exactly once, with the body never read.
@Suite("Worker over the in-memory transport: one answer per request, decided on the head")
struct WorkerExchangeTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
          - name: form
            match: { path_prefix: /form/ }
            upstream: app
            auth: bearer
            issuers: [one]
            token_in_body: true
          - name: web
            match: { path: /public }
            upstream: app
            auth: none
        """

    static func worker() throws -> Worker {
        try testWorker(yaml)
    }

    func send(
        _ w: Worker, _ method: String, _ target: String, fields: [(name: String, value: String)] = [("Host", "a")],
        body: [UInt8]? = nil
    ) -> InMemoryTransport {
        let (exchange, transport) = InMemoryTransport.exchange(method, target, fields: fields, body: body)
        w.handle(exchange)
        return transport
    }

    func json(_ t: InMemoryTransport) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(t.body))) as? [String: Any] ?? [:]
    }

    @Test func unroutedIs404WithTheErrorShape() throws {
        let w = try Self.worker()
        let t = send(w, "GET", "/nowhere")
        #expect(t.status == 404 && t.ended && !t.aborted)
        #expect(json(t)["error"] as? String == "not_found")
        #expect(t.head?.fields.first("X-Request-Id") == json(t)["request_id"] as? String)
        #expect(w.metrics.inflight == 0, "the answer completed the request")
    }

    @Test(arguments: ["/api/%2Fadmin", "/api/a;b", "/../etc", "http://evil/api/x"])
    func badTargetsAre400AndClose(target: String) throws {
        let w = try Self.worker()
        let t = send(w, "GET", target)
        #expect(t.status == 400 && t.closeAfter)
    }

    @Test func missingOrRepeatedHostIs400() throws {
        let w = try Self.worker()
        #expect(send(w, "GET", "/public", fields: []).status == 400)
        #expect(send(w, "GET", "/public", fields: [("Host", "a"), ("Host", "b")]).status == 400)
    }

    @Test func unknownMethodIs405() throws {
        #expect(send(try Self.worker(), "BREW", "/public").status == 405)
    }

    /// The rule: authentication is decided on the head; a refused request's body is
    /// never read (an unauthenticated client pins no memory).
    @Test func refusedBeforeAnyBodyByteIsRead() throws {
        let w = try Self.worker()
        let t = send(
            w, "POST", "/api/upload", fields: [("Host", "a"), ("Content-Length", "5")], body: Array("hello".utf8))
        #expect(t.status == 401 && !t.bodyRead)
        #expect(t.head?.fields.first("WWW-Authenticate") == "Bearer realm=\"tokengate\"")
        let bad = send(
            w, "POST", "/api/upload", fields: [("Host", "a"), ("Authorization", "Bearer a b")], body: Array("x".utf8))
        #expect(bad.status == 400 && !bad.bodyRead)
    }

    @Test func aFormTokenRouteReadsABoundedBody() throws {
        let w = try Self.worker()
        let form: [(name: String, value: String)] = [
            ("Host", "a"), ("Content-Type", "application/x-www-form-urlencoded"),
            ("Content-Length", "1")
        ]
        let big = send(
            w, "POST", "/form/x", fields: form,
            body: Array(repeating: UInt8(ascii: "a"), count: WorkerServices.ownBodyLimit + 1))
        #expect(big.bodyRead && big.status == 413 && big.closeAfter)
        let junk = send(w, "POST", "/form/x", fields: form, body: Array("access_token=a%20b".utf8))
        #expect(junk.bodyRead && junk.status == 400)
    }

    @Test func aClientThatLeavesIsCountedOnce() throws {
        let w = try Self.worker()
        // Gone before the answer: the answer goes nowhere, the request still completes.
        let (exchange, t) = InMemoryTransport.exchange("GET", "/nowhere", fields: [("Host", "a")])
        t.disconnect()
        w.handle(exchange)
        #expect(t.head == nil && w.metrics.inflight == 0)
    }
}
