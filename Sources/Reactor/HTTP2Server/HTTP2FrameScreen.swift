/// Reads the client's bytes as nghttp2 reads them (the 24-octet connection preface, then
/// frames: RFC 9113 §3.4, §4.1) and hands each frame's header, with a PRIORITY frame's
/// payload, to `HTTP2ClientStreams`, ahead of nghttp2: a frame that breaks one of the rules
/// nghttp2 lets by stops the reading where that frame starts, so nghttp2 reads neither it nor
/// any frame after it, and the connection ends with the rule's error. Byte-fed and resumable:
/// a frame may come in any number of pieces. No I/O, no nghttp2.
struct HTTP2FrameScreen {
    /// Frame types and flags it reads (RFC 9113 §6).
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let priority: UInt8 = 0x2
    static let rstStream: UInt8 = 0x3
    static let pushPromise: UInt8 = 0x5
    static let continuation: UInt8 = 0x9
    static let endStream: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    /// SETTINGS_MAX_FRAME_SIZE, which the gateway leaves at its initial value: nghttp2 ends the
    /// connection on a longer frame (FRAME_SIZE_ERROR, §4.2) before reading its type, so such
    /// a frame is not judged here.
    static let maxFrameSize = 16384

    /// Where a frame the screen refused starts in the bytes just read (0: in earlier ones).
    struct Refusal: Equatable {
        var offset: Int
        var violation: HTTP2ClientStreams.Violation
    }

    private enum Part {
        case preface(left: Int)
        case header
        /// A PRIORITY frame's 5 octets (§6.3), read for its stream dependency.
        case priorityPayload(stream: UInt32)
        case payload(left: Int)
        /// A frame was refused: nothing more is read.
        case refused
    }

    private var part = Part.preface(left: 24)
    private var bytes: [UInt8] = []
    /// Where the frame being read starts, from the start of the bytes being read (negative:
    /// in bytes read before).
    private var frameStart = 0
    /// The stream of a header block not yet ended (no END_HEADERS): until it ends, any frame
    /// but its CONTINUATION is nghttp2's PROTOCOL_ERROR (§6.10), and nothing is judged here.
    private var headerBlock: UInt32?
    private(set) var streams = HTTP2ClientStreams()

    /// Reads the next `input`: the first frame refused, or nil.
    mutating func read(_ input: UnsafeRawBufferPointer) -> Refusal? {
        var at = 0
        defer { frameStart -= input.count }
        while at < input.count {
            switch part {
            case .refused:
                return nil
            case .preface(let left):
                let n = min(left, input.count - at)
                at += n
                part = n == left ? .header : .preface(left: left - n)
            case .header:
                if bytes.isEmpty { frameStart = at }
                guard take(9, from: input, at: &at) else { break }
                if let violation = frameHeader() { return refuse(violation) }
            case .priorityPayload(let stream):
                guard take(5, from: input, at: &at) else { break }
                let dependency = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
                bytes.removeAll(keepingCapacity: true)
                part = .header
                let violation = streams.received(
                    type: Self.priority, flags: 0, stream: stream, dependency: dependency)
                if let violation { return refuse(violation) }
            case .payload(let left):
                let n = min(left, input.count - at)
                at += n
                part = n == left ? .header : .payload(left: left - n)
            }
        }
        return nil
    }

    /// Gathers `bytes` up to `count` from `input`; true once they are all there.
    private mutating func take(_ count: Int, from input: UnsafeRawBufferPointer, at: inout Int) -> Bool {
        let n = min(count - bytes.count, input.count - at)
        bytes += input[at..<(at + n)]
        at += n
        return bytes.count == count
    }

    /// A whole frame header is in `bytes`: judged, or left to nghttp2.
    private mutating func frameHeader() -> HTTP2ClientStreams.Violation? {
        let length = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
        let type = bytes[3]
        let flags = bytes[4]
        // The reserved bit "MUST be ignored when receiving" (§4.1).
        let stream = bytes[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
        bytes.removeAll(keepingCapacity: true)
        part = length > 0 ? .payload(left: length) : .header
        if let block = headerBlock {
            if type == Self.continuation && stream == block && flags & Self.endHeaders != 0 { headerBlock = nil }
            return nil
        }
        if (type == Self.headers || type == Self.pushPromise) && flags & Self.endHeaders == 0 { headerBlock = stream }
        guard length <= Self.maxFrameSize else { return nil }
        if type == Self.priority {
            // Another length is nghttp2's FRAME_SIZE_ERROR (§6.3).
            if length == 5 { part = .priorityPayload(stream: stream) }
            return nil
        }
        return streams.received(type: type, flags: flags, stream: stream)
    }

    private mutating func refuse(_ violation: HTTP2ClientStreams.Violation) -> Refusal {
        part = .refused
        return Refusal(offset: max(0, frameStart), violation: violation)
    }
}
