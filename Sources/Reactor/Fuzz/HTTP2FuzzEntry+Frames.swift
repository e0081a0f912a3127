/// An independent reading of HTTP/2 frames (RFC 9113 §4.1), for `HTTP2FuzzEntry`: the
/// client's input as the fuzzer wrote it, and the server's output, whose framing it checks.
extension HTTP2FuzzEntry {
    struct Frame {
        var type: UInt8
        var flags: UInt8
        var stream: UInt32
        var payload: ArraySlice<UInt8>

        var endStream: Bool { flags & 0x1 != 0 && (type == 0 || type == 1) }
    }

    enum FrameType {
        static let data: UInt8 = 0
        static let headers: UInt8 = 1
        static let rstStream: UInt8 = 3
        static let settings: UInt8 = 4
        static let ping: UInt8 = 6
        static let goAway: UInt8 = 7
        static let windowUpdate: UInt8 = 8
        static let continuation: UInt8 = 9
    }

    /// The frames of `bytes` in order, and the bytes past the last whole one.
    static func frames(_ bytes: ArraySlice<UInt8>) -> (frames: [Frame], rest: Int) {
        var frames: [Frame] = []
        var at = bytes.startIndex
        while bytes.endIndex - at >= 9 {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            guard bytes.endIndex - at - 9 >= length else { break }
            let stream =
                UInt32(bytes[at + 5] & 0x7F) << 24 | UInt32(bytes[at + 6]) << 16
                | UInt32(bytes[at + 7]) << 8 | UInt32(bytes[at + 8])
            frames.append(
                Frame(
                    type: bytes[at + 3], flags: bytes[at + 4], stream: stream,
                    payload: bytes[(at + 9)..<(at + 9 + length)]))
            at += 9 + length
        }
        return (frames, bytes.endIndex - at)
    }

    static func uint32(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt32? {
        let i = bytes.startIndex + offset
        guard bytes.endIndex - i >= 4 else { return nil }
        return UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
    }

    /// What the client's frames say, read without nghttp2: the streams it opened and reset,
    /// and the largest frame it allows the server (SETTINGS_MAX_FRAME_SIZE, RFC 9113 §6.5.2).
    struct ClientFrames {
        var opened: Set<UInt32> = []
        var reset: Set<UInt32> = []
        var maxFrameSize = 16384

        init(_ stream: [UInt8]) {
            let preface = ProtocolSelector.preface
            guard stream.starts(with: preface) else { return }
            let (frames, rest) = HTTP2FuzzEntry.frames(stream[preface.count...])
            // A HEADERS frame cut short still opened its stream (RFC 9113 §5.1): nghttp2 decodes
            // a header block as it comes, and one that decodes past the bounds is answered
            // before the rest of it arrives.
            let partial = stream.endIndex - rest
            if rest >= 9, stream[partial + 3] == FrameType.headers {
                opened.insert(
                    UInt32(stream[partial + 5] & 0x7F) << 24 | UInt32(stream[partial + 6]) << 16
                        | UInt32(stream[partial + 7]) << 8 | UInt32(stream[partial + 8]))
            }
            for frame in frames {
                switch frame.type {
                case FrameType.headers: opened.insert(frame.stream)
                case FrameType.rstStream: reset.insert(frame.stream)
                case FrameType.settings:
                    var i = 0
                    while i + 6 <= frame.payload.count {
                        let id =
                            Int(frame.payload[frame.payload.startIndex + i]) << 8
                            | Int(frame.payload[frame.payload.startIndex + i + 1])
                        if id == 5, let value = HTTP2FuzzEntry.uint32(frame.payload, at: i + 2) {
                            maxFrameSize = max(maxFrameSize, Int(value))
                        }
                        i += 6
                    }
                default: break
                }
            }
        }
    }

    /// The server's output is whole frames, each of a type a server sends, on a stream that
    /// fits it: its SETTINGS first, HEADERS only on a stream the client opened, a stream's
    /// DATA after its HEADERS and nothing framed on a stream after its END_STREAM but a
    /// reset or a window update, and no new stream answered after a GOAWAY, whose last
    /// stream id never grows (RFC 9113 §6.8).
    static func checkOutput(_ output: [UInt8], client: ClientFrames) -> [Frame] {
        let (frames, rest) = frames(output[...])
        fuzzInvariant(rest == 0, "output: \(rest) bytes past the last whole frame")
        guard let first = frames.first else { return [] }
        fuzzInvariant(
            first.type == FrameType.settings && first.flags & 1 == 0 && first.stream == 0,
            "output: the first frame is not the server's SETTINGS")
        var headed: Set<UInt32> = []
        var ended: Set<UInt32> = []
        var lastGoAway: UInt32?
        for frame in frames {
            fuzzInvariant(frame.payload.count <= client.maxFrameSize, "output: a frame past the client's frame size")
            let onStream = frame.stream != 0
            switch frame.type {
            case FrameType.settings, FrameType.ping, FrameType.goAway:
                fuzzInvariant(!onStream, "output: connection frame \(frame.type) on stream \(frame.stream)")
            case FrameType.data, FrameType.headers, FrameType.rstStream, FrameType.continuation:
                fuzzInvariant(
                    onStream && frame.stream & 1 == 1, "output: stream frame \(frame.type) on stream \(frame.stream)")
            case FrameType.windowUpdate:
                break
            default:
                fuzzInvariant(false, "output: frame type \(frame.type), which a server does not send here")
            }
            switch frame.type {
            case FrameType.headers:
                fuzzInvariant(
                    client.opened.contains(frame.stream), "output: HEADERS on a stream the client never opened")
                fuzzInvariant(!ended.contains(frame.stream), "output: HEADERS after the stream's END_STREAM")
                if let lastGoAway, !headed.contains(frame.stream) {
                    fuzzInvariant(frame.stream <= lastGoAway, "output: a stream answered past a GOAWAY's last stream")
                }
                headed.insert(frame.stream)
            case FrameType.data:
                fuzzInvariant(headed.contains(frame.stream), "output: DATA before the stream's HEADERS")
                fuzzInvariant(!ended.contains(frame.stream), "output: DATA after the stream's END_STREAM")
            case FrameType.goAway:
                let last = uint32(frame.payload, at: 0).map { $0 & 0x7FFF_FFFF }
                fuzzInvariant(last != nil, "output: a GOAWAY without its last stream id")
                if let last, let before = lastGoAway {
                    fuzzInvariant(last <= before, "output: a GOAWAY's last stream id grew")
                }
                lastGoAway = last
            default:
                break
            }
            if frame.endStream { ended.insert(frame.stream) }
        }
        return frames
    }
}
