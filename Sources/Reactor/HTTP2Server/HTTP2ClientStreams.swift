/// The client's streams as its own frames leave them (RFC 9113 §5.1), to judge the frames
/// RFC 9113 makes a connection error that nghttp2, as the gateway runs it, lets by
/// (`HTTP2SessionSetup` says why each is let by):
/// - a HEADERS frame that opens a stream whose identifier is not greater than every one the
///   client opened before (§5.1.1): PROTOCOL_ERROR; nghttp2 ignores it;
/// - a HEADERS or DATA frame on a stream the client has closed: after its END_STREAM or its
///   RST_STREAM, or skipped (a lower identifier than one it used, §5.1.1 "implicitly closes"):
///   STREAM_CLOSED (§5.1 "closed", §6.1), as nghttp2 answers while it still holds the stream;
///   it ignores such frames once the stream is gone;
/// - a PRIORITY frame on stream 0 (§6.3), or making a stream depend on itself (RFC 7540
///   §5.3.1, kept by RFC 9113 §5.3.2): PROTOCOL_ERROR; nghttp2 reads no PRIORITY frame once
///   RFC 7540 priorities are off.
///
/// Judged from the client's frames alone: a frame on a stream the server reset or refused,
/// or beyond its GOAWAY, is one the client may still send (§5.1: "An endpoint MUST minimally
/// process and then discard any frames it receives in this state"), and it stays open here.
/// Bounded: past `maxOpen` open streams or `maxSkipped` runs of skipped identifiers, the
/// oldest are forgotten, and a frame on a forgotten stream passes (to nghttp2, which ignores
/// it), as nghttp2 forgets its closed streams.
struct HTTP2ClientStreams {
    /// What a frame breaks, each a connection error (RFC 9113 §5.4.1).
    enum Violation: Equatable {
        /// §5.1.1: "The identifier of a newly established stream MUST be numerically greater
        /// than all streams that the initiating endpoint has opened or reserved".
        case streamIdentifierNotGreater
        /// §5.1: a HEADERS or DATA frame on a stream the client closed (or skipped): "An
        /// endpoint MUST NOT send frames other than PRIORITY on a closed stream", and its peer
        /// "MAY treat receipt of any other type of frame on a closed stream as a connection
        /// error ... of type STREAM_CLOSED".
        case frameOnClosedStream
        /// §6.3: "If a PRIORITY frame is received with a stream identifier of 0x00, the
        /// recipient MUST respond with a connection error ... of type PROTOCOL_ERROR."
        case priorityOnStreamZero
        /// RFC 7540 §5.3.1: "A stream cannot depend on itself." A stream error, ended as a connection
        /// error as nghttp2 ends it (§5.4.1 allows it): the stream is most often idle, and a
        /// stream error on an idle stream cannot be sent (§6.4).
        case streamDependsOnItself

        /// Its error code (RFC 9113 §7).
        var errorCode: UInt32 {
            switch self {
            case .frameOnClosedStream: 0x5  // STREAM_CLOSED
            case .streamIdentifierNotGreater, .priorityOnStreamZero, .streamDependsOnItself: 0x1  // PROTOCOL_ERROR
            }
        }
    }

    static let maxOpen = 256
    static let maxSkipped = 16

    /// The highest stream a client's HEADERS frame named: every odd identifier at or below it
    /// is open, closed, or skipped.
    private(set) var highest: UInt32 = 0
    /// Streams the client opened and has not closed (no END_STREAM nor RST_STREAM from it),
    /// ascending: it may still send HEADERS (a trailer section) and DATA on them.
    private(set) var open: [UInt32] = []
    /// Odd identifiers the client skipped, in runs, ascending.
    private(set) var skipped: [ClosedRange<UInt32>] = []
    /// Identifiers below it were forgotten (the bounds): frames on them pass.
    private(set) var knownFrom: UInt32 = 0

    /// A frame from the client (its type, flags and stream; a PRIORITY frame's dependency).
    mutating func received(type: UInt8, flags: UInt8, stream: UInt32, dependency: UInt32? = nil) -> Violation? {
        if type == HTTP2FrameScreen.priority {
            if stream == 0 { return .priorityOnStreamZero }
            return dependency == stream ? .streamDependsOnItself : nil
        }
        // Stream 0, and the even identifiers a client never opens, are nghttp2's to refuse.
        guard stream & 1 == 1 else { return nil }
        let endStream = flags & HTTP2FrameScreen.endStream != 0
        switch type {
        case HTTP2FrameScreen.headers where stream > highest:
            opened(stream, endStream: endStream)
            return nil
        case HTTP2FrameScreen.headers, HTTP2FrameScreen.data:
            // DATA on an idle stream is nghttp2's PROTOCOL_ERROR.
            guard stream <= highest, stream >= knownFrom else { return nil }
            if let i = indexOpen(stream) {
                if endStream { open.remove(at: i) }
                return nil
            }
            let isSkipped = skipped.contains { $0.contains(stream) }
            return type == HTTP2FrameScreen.headers && isSkipped ? .streamIdentifierNotGreater : .frameOnClosedStream
        case HTTP2FrameScreen.rstStream:
            if let i = indexOpen(stream) { open.remove(at: i) }
            return nil
        default:
            return nil
        }
    }

    private mutating func opened(_ stream: UInt32, endStream: Bool) {
        if stream > highest &+ 2 { skipped.append((highest + 1 | 1)...(stream - 2)) }
        highest = stream
        if !endStream { open.append(stream) }
        if open.count > Self.maxOpen { forget(below: open[0] + 1) }
        if skipped.count > Self.maxSkipped { forget(below: skipped[0].upperBound + 1) }
    }

    private mutating func forget(below id: UInt32) {
        knownFrom = max(knownFrom, id)
        open.removeAll { $0 < knownFrom }
        skipped = skipped.compactMap { run in
            run.upperBound < knownFrom ? nil : max(run.lowerBound, knownFrom | 1)...run.upperBound
        }
    }

    /// Where `stream` is in `open` (ascending), by bisection.
    private func indexOpen(_ stream: UInt32) -> Int? {
        var low = 0
        var high = open.count
        while low < high {
            let mid = (low + high) / 2
            if open[mid] < stream { low = mid + 1 } else { high = mid }
        }
        return low < open.count && open[low] == stream ? low : nil
    }
}
