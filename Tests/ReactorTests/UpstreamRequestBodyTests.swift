import Foundation
import TestSupport
import Testing

@testable import Reactor

/// Request bodies streamed to the upstream: framing, integrity, backpressure, an early
/// response, and a client body that fails.
@Suite("UpstreamCall: request bodies")
struct UpstreamRequestBodyTests {
    /// Deterministic, not all one byte (a misplaced chunk would show).
    static func payload(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { b in
            var v = seed % 26
            for i in 0..<count {
                b[i] = 0x61 + v
                v = v == 25 ? 0 : v + 1
            }
        }
        return out
    }

    static func split(_ bytes: [UInt8], _ size: Int) -> [[UInt8]] {
        stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
    }

    static func bodyOf(_ request: [UInt8]) -> ArraySlice<UInt8> {
        let crlf2: [UInt8] = [13, 10, 13, 10]
        let i = (0...(request.count - 4)).first { Array(request[$0..<($0 + 4)]) == crlf2 }!
        return request[(i + 4)...]
    }

    @Test func contentLengthBodyArrivesIntact() throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]])
        let h = UpstreamHarness(port: server.port)
        let data = Self.payload(10_000)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .length(UInt64(data.count)), chunks: Self.split(data, 3000), interval: 0.01)
        let r = h.call(.PUT, "/upload", body: body)
        #expect(r.completed)
        let request = try #require(server.requests.first)
        let text = String(decoding: request.prefix(200), as: UTF8.self)
        #expect(text.hasPrefix("PUT /upload HTTP/1.1\r\nHost: upstream\r\nContent-Length: 10000\r\n\r\n"))
        #expect(Array(Self.bodyOf(request)) == data)
        #expect(h.pool.idleCount == 1)
    }

    @Test func bufferedBodyGoesWithTheHeadInOneWrite() throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]])
        let h = UpstreamHarness(port: server.port)
        let r = h.call(.POST, "/form", body: BufferedRequestBody(Array("a=1&b=2".utf8)))
        #expect(r.completed)
        #expect(server.requestTexts == ["POST /form HTTP/1.1\r\nHost: upstream\r\nContent-Length: 7\r\n\r\na=1&b=2"])
    }

    @Test func streamedBodyIsSentChunked() throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]])
        let h = UpstreamHarness(port: server.port)
        let data = Self.payload(50_000, seed: 3)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .streamed, chunks: Self.split(data, 7000), interval: 0.005)
        let r = h.call(.POST, "/stream", body: body)
        #expect(r.completed && r.bodyText == "ok")
        let request = try #require(server.requests.first)
        #expect(
            String(decoding: request.prefix(100), as: UTF8.self).hasPrefix(
                "POST /stream HTTP/1.1\r\nHost: upstream\r\nTransfer-Encoding: chunked\r\n\r\n"))
        #expect(decodeChunked(Self.bodyOf(request)) == data)
    }

    /// The client's trailer section goes in the last chunk, as far as the request's policy
    /// lets each field through; without a policy none does.
    @Test(arguments: [false, true])
    func trailersGoInTheLastChunkAsThePolicySays(withPolicy: Bool) throws {
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]])
        let h = UpstreamHarness(port: server.port)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .streamed, chunks: [Array("hello".utf8)],
            trailers: HTTP1Fields([("X-Checksum", "42"), ("X-Secret", "no")]))
        let policy = withPolicy ? NamePolicy(refusing: "x-secret") : nil
        let r = h.call(.POST, "/stream", body: body, trailerPolicy: policy)
        #expect(r.completed && r.bodyText == "ok")
        let request = try #require(server.requestTexts.first)
        let end = withPolicy ? "0\r\nX-Checksum: 42\r\n\r\n" : "0\r\n\r\n"
        #expect(request.hasSuffix("5\r\nhello\r\n" + end))
    }

    /// A body much larger than the socket buffers, to an upstream that waits before reading:
    /// the client's body is paused past the high-water mark and resumed as it drains, and
    /// every byte arrives in order.
    @Test func largeBodyIsHeldBackByBackpressure() throws {
        // The upstream's small receive buffer leaves the kernel's send buffer (up to 4 MiB
        // here) as the only slack: 12 MiB cannot fit while it sleeps.
        let data = Self.payload(12 << 20, seed: 7)
        let server = try ScriptedUpstream(
            [[.sleep(0.5), .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")]],
            receiveBuffer: 32 << 10)
        let h = UpstreamHarness(port: server.port, responseTimeout: 5)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .length(UInt64(data.count)), chunks: Self.split(data, 64 << 10))
        let r = h.call(.POST, "/big", body: body, limit: 20)
        #expect(r.completed)
        #expect(r.failure == nil)
        #expect(body.pauses > 0)
        #expect(body.resumes == body.pauses)
        #expect(body.delivered == data.count)
        let request = try #require(server.requests.first)
        #expect(Self.bodyOf(request).elementsEqual(data))
    }

    /// The upstream answers before the body is sent: sending stops, the response is
    /// delivered, and the connection is closed afterwards.
    @Test func earlyResponseStopsTheBody() throws {
        let server = try ScriptedUpstream([
            [.readHead, .send("HTTP/1.1 413 Content Too Large\r\nContent-Length: 4\r\n\r\nnope"), .expectClose]
        ])
        let h = UpstreamHarness(port: server.port)
        let data = Self.payload(100 * 1000)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .length(UInt64(data.count)), chunks: Self.split(data, 1000), interval: 0.02)
        let r = h.call(.POST, "/upload", body: body)
        #expect(r.events == ["head 413", "body", "complete"])
        #expect(r.bodyText == "nope")
        #expect(body.paused)
        #expect(body.delivered < data.count)
        #expect(h.pool.openConnections == 0)
        _ = server.finished.wait(timeout: .now() + 5)
        #expect(server.clientClosed == [true])
    }

    @Test func clientBodyFailureAbortsTheExchange() throws {
        let server = try ScriptedUpstream([[.readHead, .expectClose]])
        let h = UpstreamHarness(port: server.port)
        let body = ScriptedRequestBody(
            loop: h.loop, framing: .streamed, chunks: [Array("part".utf8)], interval: 0.02, failure: .clientGone)
        let r = h.call(.POST, "/upload", body: body)
        #expect(r.failure == .clientBodyFailed(.clientGone) && r.failedAfterHead == false)
        #expect(h.pool.openConnections == 0)
        _ = server.finished.wait(timeout: .now() + 5)
        #expect(server.clientClosed == [true])
    }

    /// A body that fails while `start()` is still running (a collected body that was too
    /// large, say): the failure reaches the delegate on the next loop turn, never from inside
    /// `start()`, and a `cancel()` before then silences it.
    @Test(arguments: [false, true])
    func failureInsideStartIsDeferred(cancelAtOnce: Bool) throws {
        let server = try ScriptedUpstream([])
        let h = UpstreamHarness(port: server.port)
        let body = ScriptedRequestBody(loop: h.loop, framing: .streamed, chunks: [], failure: .tooLarge)
        let recorder = UpstreamRecorder()
        let call = UpstreamCall(
            pool: h.pool, request: UpstreamCall.Request(method: .POST, target: "/", fields: HTTP1Fields(), body: body),
            delegate: recorder)
        call.start()
        #expect(recorder.events.isEmpty)
        if cancelAtOnce { call.cancel() }
        h.wait(0.1)
        #expect(recorder.events.count == (cancelAtOnce ? 0 : 1))
        #expect(recorder.failure == (cancelAtOnce ? nil : .clientBodyFailed(.tooLarge)))
        #expect(h.pool.openConnections == 0)
    }

    @Test func bodyLongerThanItsContentLengthIsRefused() throws {
        let server = try ScriptedUpstream([[.readHead, .expectClose]])
        let h = UpstreamHarness(port: server.port)
        let body = ScriptedRequestBody(loop: h.loop, framing: .length(3), chunks: [Array("four".utf8)], interval: 0.01)
        let r = h.call(.POST, "/upload", body: body)
        #expect(r.failure == .clientBodyFailed(.malformed))
        #expect(h.pool.openConnections == 0)
    }
}

/// A trailer policy that lets every field through but one.
final class NamePolicy: RequestTrailerPolicy {
    let refused: String
    init(refusing name: String) { refused = name }
    func forwardsTrailer(_ name: Span<UInt8>) -> Bool {
        var text = ""
        for i in name.indices { text.append(Character(UnicodeScalar(HTTP1Fields.lower(name[i])))) }
        return text != refused
    }
}
