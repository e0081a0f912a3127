import Foundation
import Testing

@testable import Reactor

/// A body streamed under a gRPC message limit (`StreamedBodyLimit.messages`) on the HTTP/1.1
/// server: the whole body may pass `maxBodySize` (announced or not), a message past its limit
/// fails the reader as `.tooLarge` wherever the chunks split its prefix. (HTTP/2 feeds the same
/// counter from its DATA frames: IntegrationTests/h2/test_grpc_message_size.py.)
@Suite("HTTP/1.1 server: gRPC message limits", .serialized)
struct HTTP1ServerGRPCBodyTests {
    static let limit = StreamedBodyLimit(total: .max, messages: GRPCMessageLimit(maxMessage: 300))

    /// A server whose `maxBodySize` is 1000 and whose handler streams every body under `limit`.
    static func harness(_ sink: CollectingSink, limit: StreamedBodyLimit = limit) throws -> HTTP1ServerHarness {
        var options = HTTPServerOptions()
        options.maxBodySize = 1000
        return try HTTP1ServerHarness(options: options) { exchange in
            sink.onEnd = {
                exchange.responder.respond(
                    status: sink.failure == .tooLarge ? 413 : sink.failure == nil ? 200 : 400,
                    body: Array("\(sink.bytes.count)".utf8))
            }
            exchange.body.stream(to: sink, limit: limit)
        }
    }

    static func chunked(_ pieces: [[UInt8]]) -> [UInt8] {
        var out = Array("POST /s.S/M HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for p in pieces { out += Array((String(p.count, radix: 16) + "\r\n").utf8) + p + Array("\r\n".utf8) }
        return out + Array("0\r\n\r\n".utf8)
    }

    @Test func manyMessagesPastMaxBodySizeInAllPass() throws {
        let sink = CollectingSink()
        let h = try Self.harness(sink)
        defer { h.stop() }
        let message = GRPCMessageCounterTests.frame(300)
        // 10 messages at the limit (3050 bytes), chunks cut inside the prefixes.
        let body = Array((0..<10).map { _ in message }.joined())
        let pieces = stride(from: 0, to: body.count, by: 97).map { Array(body[$0..<min($0 + 97, body.count)]) }
        let client = try TestClient(port: h.port)
        client.send(Self.chunked(pieces))
        let response = try #require(client.readResponse())
        #expect(response.status == 200 && response.text == "3050")
        // Announced by Content-Length past maxBodySize: not refused for it either.
        client.send(Array("POST /s.S/M HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        #expect(client.readResponse()?.status == 200)
    }

    @Test func aMessagePastItsLimitIsTooLarge() throws {
        let sink = CollectingSink()
        let h = try Self.harness(sink)
        defer { h.stop() }
        let body = GRPCMessageCounterTests.frame(300) + GRPCMessageCounterTests.frame(301)
        let client = try TestClient(port: h.port)
        // The second prefix split across two chunks.
        client.send(Self.chunked([Array(body[0..<307]), Array(body[307...])]))
        #expect(client.readResponse()?.status == 413)
        // Handed on: the first message and what came with it, never the refused one's bytes.
        #expect(h.onLoop { sink.failure == .tooLarge && (305..<310).contains(sink.bytes.count) })
    }

    /// Without a gRPC limit the same body meets `maxBodySize`, as before.
    @Test func withoutAMessageLimitMaxBodySizeHolds() throws {
        let sink = CollectingSink()
        let h = try Self.harness(sink, limit: .server)
        defer { h.stop() }
        let body = Array((0..<4).map { _ in GRPCMessageCounterTests.frame(300) }.joined())
        let client = try TestClient(port: h.port)
        client.send(Self.chunked([body]))
        #expect(client.readResponse()?.status == 413)
    }
}
