import Testing

@testable import Reactor

/// A request's trailer section over HTTP/2 (RFC 9113 §8.1: a HEADERS frame after the body,
/// with END_STREAM) reaches the body's reader with its end, and one that carries a field
/// trailers may not carry makes the request malformed: the stream is reset, the reader told
/// the body failed, as HTTP/1.1's `forbidden_trailer_field` does.
@Suite("HTTP/2: request trailers")
struct HTTP2RequestTrailersTests {
    static func id(_ id: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: id >> $0) } }

    /// Preface, SETTINGS, then on stream 1: HEADERS (POST https / `:authority: a`, END_HEADERS
    /// only), DATA "hi", and a trailing HEADERS block (END_STREAM, END_HEADERS) holding
    /// `name: value` as literals without indexing.
    static func request(trailer name: String, _ value: String) -> [UInt8] {
        let settings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]
        let head: [UInt8] = [0x83, 0x87, 0x84, 0x01, 0x01, 0x61]
        let data = Array("hi".utf8)
        let block: [UInt8] =
            [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        return ProtocolSelector.preface + settings
            + [0, 0, UInt8(head.count), 1, 4] + id(1) + head
            + [0, 0, UInt8(data.count), 0, 0] + id(1) + data
            + [0, 0, UInt8(block.count), 1, 5] + id(1) + block
    }

    /// Feeds `input` (whole, or a byte at a time) to a connection whose gateway streams each
    /// body to a `CollectingSink` and answers 200 at its end.
    static func serve(_ input: [UInt8], byteAtATime: Bool) -> (CollectingSink, [HTTP2FuzzEntry.Frame]) {
        let sink = CollectingSink()
        let context = ServerContext(options: HTTPServerOptions()) { exchange in
            sink.onEnd = { [weak exchange] in exchange?.respond(status: sink.failure == nil ? 200 : 400, body: []) }
            exchange.body.stream(to: sink)
        }
        let connection = HTTP2FuzzConnection(context: context)!
        if byteAtATime {
            for i in input.indices { connection.feed(input[i...i]) }
        } else {
            connection.feed(input[...])
        }
        let frames = HTTP2FuzzEntry.checkOutput(connection.written, client: HTTP2FuzzEntry.ClientFrames(input))
        connection.close()
        return (sink, frames)
    }

    @Test(arguments: [false, true])
    func trailersReachTheReaderWithTheBodysEnd(byteAtATime: Bool) {
        let (sink, frames) = Self.serve(Self.request(trailer: "x-checksum", "1234"), byteAtATime: byteAtATime)
        #expect(sink.ended && sink.failure == nil)
        #expect(sink.bytes == Array("hi".utf8))
        #expect(sink.trailers.map { "\($0.name): \($0.value)" } == ["x-checksum: 1234"])
        #expect(!frames.contains { $0.type == HTTP2FuzzEntry.FrameType.rstStream })
    }

    /// Fields that frame or route the message (RFC 9110 §6.5.1), and `te`, which nghttp2
    /// lets through in a trailer section: the stream is reset and the body fails.
    @Test(arguments: ["content-length", "host", "te"])
    func aFramingFieldInTrailersResetsTheStream(name: String) {
        let value = name == "te" ? "trailers" : name == "host" ? "evil" : "2"
        let (sink, frames) = Self.serve(Self.request(trailer: name, value), byteAtATime: false)
        #expect(!sink.ended || sink.failure != nil)
        #expect(sink.trailers.isEmpty)
        #expect(frames.contains { $0.type == HTTP2FuzzEntry.FrameType.rstStream && $0.stream == 1 })
    }
}
