import Testing

@testable import Reactor

/// The rules of RFC 9113 that nghttp2, as the gateway runs it, lets by (`HTTP2ClientStreams`),
/// judged from the client's frames as they come (`HTTP2FrameScreen`), without sockets.
@Suite("HTTP/2: the frame screen")
struct HTTP2FrameScreenTests {
    typealias Violation = HTTP2ClientStreams.Violation
    static let data: UInt8 = 0
    static let headers: UInt8 = 1
    static let priority: UInt8 = 2
    static let rstStream: UInt8 = 3
    static let endStream: UInt8 = 1

    static func id(_ id: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: id >> $0) } }

    static func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: [UInt8] = []) -> [UInt8] {
        Array(id(UInt32(payload.count)).dropFirst()) + [type, flags] + id(stream) + payload
    }

    /// HEADERS for GET https / with `:authority: a`, END_HEADERS (and END_STREAM).
    static func request(_ stream: UInt32, endStream: Bool = true, extra: [UInt8] = []) -> [UInt8] {
        frame(headers, endStream ? 5 : 4, stream, [0x82, 0x87, 0x84, 0x01, 0x01, 0x61] + extra)
    }

    static let opening = ProtocolSelector.preface + frame(4, 0, 0)

    // MARK: the rules

    @Test func aNewStreamMustHaveAGreaterIdentifier() {
        var streams = HTTP2ClientStreams()
        #expect(streams.received(type: Self.headers, flags: 5, stream: 5) == nil)
        // 1 and 3 were skipped: closed, never to be opened (RFC 9113 §5.1.1).
        #expect(streams.received(type: Self.headers, flags: 5, stream: 3) == .streamIdentifierNotGreater)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 1) == .streamIdentifierNotGreater)
        #expect(streams.received(type: Self.data, flags: 1, stream: 1) == .frameOnClosedStream)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 9) == nil)
        #expect(streams.skipped == [1...3, 7...7])
    }

    @Test func aStreamTheClientEndedOrResetTakesNoHeadersNorData() {
        var streams = HTTP2ClientStreams()
        #expect(streams.received(type: Self.headers, flags: 5, stream: 1) == nil)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 1) == .frameOnClosedStream)
        #expect(streams.received(type: Self.data, flags: 0, stream: 1) == .frameOnClosedStream)
        #expect(streams.received(type: Self.headers, flags: 4, stream: 3) == nil)
        #expect(streams.received(type: Self.rstStream, flags: 0, stream: 3) == nil)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 3) == .frameOnClosedStream)
        #expect(streams.received(type: Self.data, flags: 1, stream: 3) == .frameOnClosedStream)
        // RST_STREAM and PRIORITY on a closed stream, and WINDOW_UPDATE, are allowed (§5.1).
        #expect(streams.received(type: Self.rstStream, flags: 0, stream: 3) == nil)
        #expect(streams.received(type: Self.priority, flags: 0, stream: 3, dependency: 0) == nil)
        #expect(streams.received(type: 8, flags: 0, stream: 3) == nil)
    }

    /// Body and trailer section on a stream the client has not ended, whatever the server did
    /// with it (reset, refused, past its GOAWAY): §5.1 asks the server to discard them.
    @Test func anOpenStreamTakesDataAndATrailerSection() {
        var streams = HTTP2ClientStreams()
        #expect(streams.received(type: Self.headers, flags: 4, stream: 1) == nil)
        #expect(streams.received(type: Self.headers, flags: 4, stream: 3) == nil)
        #expect(streams.received(type: Self.data, flags: 0, stream: 1) == nil)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 1) == nil)
        #expect(streams.received(type: Self.data, flags: 1, stream: 3) == nil)
        #expect(streams.open.isEmpty)
        #expect(streams.received(type: Self.data, flags: 0, stream: 3) == .frameOnClosedStream)
    }

    @Test func priorityOnStreamZeroOrOnItself() {
        var streams = HTTP2ClientStreams()
        #expect(streams.received(type: Self.priority, flags: 0, stream: 0, dependency: 1) == .priorityOnStreamZero)
        #expect(streams.received(type: Self.priority, flags: 0, stream: 5, dependency: 5) == .streamDependsOnItself)
        // On an idle stream a PRIORITY frame opens nothing: stream 3 may open after it.
        #expect(streams.received(type: Self.priority, flags: 0, stream: 5, dependency: 1) == nil)
        #expect(streams.highest == 0)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 3) == nil)
    }

    /// Stream 0, even identifiers and idle streams are nghttp2's to refuse, with its own codes.
    @Test func whatNghttp2RefusesItselfIsLeftToIt() {
        var streams = HTTP2ClientStreams()
        #expect(streams.received(type: Self.headers, flags: 5, stream: 0) == nil)
        #expect(streams.received(type: Self.headers, flags: 5, stream: 2) == nil)
        #expect(streams.received(type: Self.data, flags: 1, stream: 7) == nil)
        #expect(streams.received(type: Self.rstStream, flags: 0, stream: 9) == nil)
        #expect(streams.highest == 0)
    }

    /// Past the bounds the oldest streams are forgotten, and frames on them pass, as on a
    /// stream nghttp2 no longer holds.
    @Test func theBoundsForgetTheOldestStreams() {
        var streams = HTTP2ClientStreams()
        for i in 0..<UInt32(HTTP2ClientStreams.maxOpen + 1) {
            #expect(streams.received(type: Self.headers, flags: 4, stream: 1 + 2 * i) == nil)
        }
        #expect(streams.open.count == HTTP2ClientStreams.maxOpen)
        #expect(streams.knownFrom == 2)
        #expect(streams.received(type: Self.data, flags: 1, stream: 1) == nil)
        #expect(streams.received(type: Self.data, flags: 1, stream: 3) == nil)
        #expect(streams.received(type: Self.data, flags: 1, stream: 3) == .frameOnClosedStream)

        var skipping = HTTP2ClientStreams()
        for i in 0..<UInt32(HTTP2ClientStreams.maxSkipped + 1) {
            #expect(skipping.received(type: Self.headers, flags: 5, stream: 3 + 4 * i) == nil)
        }
        #expect(skipping.skipped.count == HTTP2ClientStreams.maxSkipped)
        #expect(skipping.received(type: Self.headers, flags: 5, stream: 1) == nil)
        #expect(skipping.received(type: Self.headers, flags: 5, stream: 5) == .streamIdentifierNotGreater)
    }

    // MARK: the screen

    /// The refusal names where the refused frame starts, wherever the bytes are cut.
    @Test func aRefusalStopsWhereItsFrameStartsInEveryCut() {
        let input = Self.opening + Self.request(5) + Self.request(3) + Self.request(7)
        let start = Self.opening.count + Self.request(5).count
        for size in [input.count, 1, 2, 5, 9, 13] {
            var screen = HTTP2FrameScreen()
            var found: (at: Int, violation: Violation)?
            for piece in stride(from: 0, to: input.count, by: size) {
                let bytes = input[piece..<min(piece + size, input.count)]
                if let refusal = bytes.withUnsafeBytes({ screen.read($0) }) {
                    found = (piece + refusal.offset, refusal.violation)
                    break
                }
            }
            // A frame whose header began in an earlier piece stops the piece that completes it
            // at its start.
            let completedIn = (start + 8) / size * size
            #expect(found?.violation == .streamIdentifierNotGreater)
            #expect(found?.at == max(start, completedIn), "pieces of \(size)")
        }
    }

    @Test func aPriorityFrameIsReadForItsDependency() {
        func refused(_ frames: [UInt8]) -> Violation? {
            var screen = HTTP2FrameScreen()
            return (Self.opening + frames).withUnsafeBytes { screen.read($0) }?.violation
        }
        #expect(refused(Self.frame(Self.priority, 0, 0, Self.id(1) + [16])) == .priorityOnStreamZero)
        #expect(refused(Self.frame(Self.priority, 0, 3, Self.id(3) + [16])) == .streamDependsOnItself)
        // The exclusive bit is not part of the dependency.
        #expect(refused(Self.frame(Self.priority, 0, 3, Self.id(0x8000_0003) + [16])) == .streamDependsOnItself)
        #expect(refused(Self.frame(Self.priority, 0, 3, Self.id(1) + [16]) + Self.request(3)) == nil)
        // Another length is nghttp2's FRAME_SIZE_ERROR (RFC 9113 §6.3).
        #expect(refused(Self.frame(Self.priority, 0, 0, Self.id(1))) == nil)
    }

    /// Inside a header block any frame but its CONTINUATION is nghttp2's PROTOCOL_ERROR
    /// (§6.10), and a frame past SETTINGS_MAX_FRAME_SIZE its FRAME_SIZE_ERROR (§4.2): those
    /// are not judged here, so nghttp2's own code goes out.
    @Test func framesNghttp2RefusesFirstAreNotJudged() {
        func refused(_ frames: [UInt8]) -> Violation? {
            var screen = HTTP2FrameScreen()
            return (Self.opening + frames).withUnsafeBytes { screen.read($0) }?.violation
        }
        let open = Self.frame(Self.headers, 1, 1, [0x82, 0x87])
        #expect(refused(open + Self.frame(Self.priority, 0, 0, Self.id(1) + [16])) == nil)
        #expect(refused(open + Self.request(1)) == nil)
        let ended = open + Self.frame(9, 4, 1, [0x84, 0x01, 0x01, 0x61])
        #expect(refused(ended + Self.request(1)) == .frameOnClosedStream)
        let huge = Self.frame(Self.headers, 5, 1, [UInt8](repeating: 0, count: HTTP2FrameScreen.maxFrameSize + 1))
        #expect(refused(Self.request(1) + huge) == nil)
    }

    // MARK: on a connection

    /// Feeds `pieces` to a real handler, one read each; the GOAWAY's last stream and code, the
    /// streams answered with HEADERS, and how many exchanges the gateway got.
    static func serve(_ pieces: [[UInt8]], limits: Bool = false) -> Served {
        var served = Served()
        var options = HTTPServerOptions()
        if limits { options.maxHeaderSize = 256 }
        let context = ServerContext(options: options) { exchange in
            served.exchanges += 1
            exchange.respond(status: 200, body: [])
        }
        let connection = HTTP2FuzzConnection(context: context)!
        for piece in pieces { connection.feed(piece[...]) }
        let out = connection.written
        connection.close()
        var i = 0
        while i + 9 <= out.count {
            let length = Int(out[i]) << 16 | Int(out[i + 1]) << 8 | Int(out[i + 2])
            let stream = out[(i + 5)..<(i + 9)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if out[i + 3] == 7, i + 17 <= out.count {
                served.goAway = (
                    out[(i + 9)..<(i + 13)].reduce(0) { $0 << 8 | UInt32($1) },
                    out[(i + 13)..<(i + 17)].reduce(0) { $0 << 8 | UInt32($1) }
                )
            } else if out[i + 3] == 1 {
                served.answered.append(stream)
            }
            i += 9 + length
        }
        return served
    }

    /// `input` in pieces of `size` (whole when nil).
    static func pieces(_ input: [UInt8], by size: Int?) -> [[UInt8]] {
        let size = size ?? input.count
        return stride(from: 0, to: input.count, by: size).map { Array(input[$0..<min($0 + size, input.count)]) }
    }

    struct Served {
        var goAway: (lastStream: UInt32, code: UInt32)?
        var answered: [UInt32] = []
        var exchanges = 0
    }

    /// The frames before the refused one are read; the refused one and those after it are
    /// not: GOAWAY names the last stream read, with the rule's code (RFC 9113 §5.4.1).
    @Test func aRefusedFrameEndsTheConnectionAndNothingAfterItIsRead() {
        let input = Self.opening + Self.request(5) + Self.request(3) + Self.request(7)
        for size in [nil, 1, 7] {
            let served = Self.serve(Self.pieces(input, by: size))
            #expect(served.goAway?.lastStream == 5)
            #expect(served.goAway?.code == 0x1)
            // Stream 5's answer goes out when it was framed before the refusal (a later read).
            #expect(served.answered.allSatisfy { $0 == 5 })
            #expect(served.exchanges == 1)
        }
    }

    @Test func headersAfterTheClientsResetAreStreamClosed() {
        let input =
            Self.opening + Self.request(1, endStream: false) + Self.frame(Self.rstStream, 0, 1, Self.id(8))
            + Self.request(1)
        #expect(Self.serve([input]).goAway?.code == 0x5)
    }

    /// The gateway answers a POST before its body came (RST_STREAM NO_ERROR after the answer):
    /// the client's body and trailer section, sent before it read that, are discarded (§5.1),
    /// and the connection serves on.
    @Test func framesOnAStreamTheServerResetAreDiscarded() {
        let post = Self.frame(Self.headers, 4, 1, [0x83, 0x87, 0x84, 0x01, 0x01, 0x61])
        let late =
            Self.frame(Self.data, 0, 1, [1, 2, 3]) + Self.frame(Self.headers, 5, 1, [0x40, 0x01, 0x78, 0x01, 0x79])
        let served = Self.serve([Self.opening + post, late + Self.request(3)])
        #expect(served.goAway == nil)
        #expect(served.answered == [1, 3])
        #expect(served.exchanges == 2)
    }

    /// A header block past twice the bounds pauses nghttp2's read half-way (its 431 goes out
    /// first); the screen has read past it, and the refusal still stops where its frame starts.
    @Test func aRefusalAfterAPausedReadStillStopsAtItsFrame() {
        let bomb = Self.request(1, extra: [UInt8](repeating: 0x90, count: 300))
        let input = Self.opening + bomb + Self.request(3) + Self.request(1) + Self.request(5)
        for size in [nil, 64] {
            let served = Self.serve(Self.pieces(input, by: size), limits: true)
            // Stream 1's answer is the engine's 431: only stream 3 reached the gateway.
            #expect(served.answered.first == 1)
            #expect(served.exchanges == 1)
            #expect(served.goAway?.lastStream == 3)
            #expect(served.goAway?.code == 0x5)
        }
    }
}
