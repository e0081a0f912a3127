internal import CNghttp2

/// nghttp2's callbacks (wired in `HTTP2Session`): each records what happened in the stream
/// and the event queue and returns; nothing here calls the gateway. A non-zero return is
/// nghttp2's `NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE`: the stream is reset, the connection
/// goes on.
extension HTTP2ConnectionHandler {
    private static let resetStream = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue

    private static func has(_ frame: nghttp2_frame, _ flag: nghttp2_flag) -> Bool {
        frame.hd.flags & UInt8(flag.rawValue) != 0
    }

    func beginHeaders(_ frame: nghttp2_frame) -> Int32 {
        guard frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), frame.headers.cat == NGHTTP2_HCAT_REQUEST else {
            return 0
        }
        glitches.streamOpened()
        let stream = HTTP2Stream(id: frame.hd.stream_id, handler: self, limits: limits)
        stream.headersStartedAt = LazyDeadline.now()
        lastActiveAt = stream.headersStartedAt
        streams[stream.id] = stream
        return 0
    }

    func header(_ frame: nghttp2_frame, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[frame.hd.stream_id] else { return 0 }
        if !stream.headersComplete {
            // Past twice the bounds, nghttp2 decodes the rest of the block without handing
            // over (and checking) each field, which is what made a bomb cost ~20 ms of CPU per
            // 16 KB block. The stream has its 431 and RST_STREAM(NO_ERROR) by then, so the
            // reset nghttp2 would add is not sent (a stream already closing gets no other).
            guard !stream.headers.isBomb else { return Self.resetStream }
            stream.headers.add(name: name, value: value)
            guard stream.headers.isBomb else { return 0 }
            // The read stops here; the 431 (`start` finds the head refused) goes out first.
            headerBlockPaused = true
            events.append(.head(stream))
            return NGHTTP2_ERR_PAUSE.rawValue
        }
        // A trailer section (RFC 9113 §8.1), bounded like HTTP/1.1's. nghttp2 has refused
        // pseudo-headers and most connection-specific fields; the ones it lets through in a
        // trailer section, and those that frame or route the message (RFC 9110 §6.5.1), make
        // the request malformed, as HTTP/1.1's `forbidden_trailer_field` does.
        stream.trailerBytes += name.count + value.count + 4
        guard stream.trailerBytes <= limits.maxTrailerBytes, stream.requestTrailers.count < limits.maxHeaderCount,
            !Self.forbiddenInTrailers(name)
        else { return Self.resetStream }
        stream.requestTrailers.append(name: name, value: value)
        return 0
    }

    private static let notTrailers: [[UInt8]] = ["te", "content-length", "host", "transfer-encoding"].map {
        Array($0.utf8)
    }

    /// nghttp2 hands names over lowercase (it refuses uppercase ones).
    private static func forbiddenInTrailers(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        notTrailers.contains { $0.elementsEqual(name) }
    }

    func frameReceived(_ frame: nghttp2_frame) -> Int32 {
        let endStream = Self.has(frame, NGHTTP2_FLAG_END_STREAM)
        switch frame.hd.type {
        case UInt8(NGHTTP2_DATA.rawValue) where frame.hd.length == 0 && !endStream:
            if !glitch() { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
        case UInt8(NGHTTP2_WINDOW_UPDATE.rawValue):
            if glitches.windowUpdateReceived() && !glitch() { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
        default:
            break
        }
        guard let stream = streams[frame.hd.stream_id] else { return 0 }
        switch frame.hd.type {
        case UInt8(NGHTTP2_HEADERS.rawValue):
            if stream.request.headerBlockEnded() {
                stream.body.complete = endStream
                stream.lastBodyAt = LazyDeadline.now()
                events.append(.head(stream))
            } else if endStream {
                stream.body.complete = true
                events.append(.body(stream))
            }
        case UInt8(NGHTTP2_DATA.rawValue):
            if endStream {
                stream.body.complete = true
                events.append(.body(stream))
            }
        default:
            break
        }
        return 0
    }

    func dataReceived(_ id: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard let stream = streams[id], stream.handler != nil else {
            // Not credited to a stream any more: credit the connection so it never stalls.
            if let session { nghttp2_session_consume_connection(session, bytes.count) }
            return 0
        }
        stream.received.append(bytes)
        stream.lastBodyAt = LazyDeadline.now()
        if stream.started { events.append(.body(stream)) }
        return 0
    }

    func frameSent(_ frame: nghttp2_frame) -> Int32 {
        let type = frame.hd.type
        if type == UInt8(NGHTTP2_DATA.rawValue) { glitches.dataFrameSent() }
        if type == UInt8(NGHTTP2_RST_STREAM.rawValue), frame.rst_stream.error_code != NGHTTP2_NO_ERROR.rawValue,
            frame.rst_stream.error_code != NGHTTP2_CANCEL.rawValue
        {
            // The GOAWAY goes out after this frame; the connection then ends (`drive`).
            _ = glitch()
            return 0
        }
        guard type == UInt8(NGHTTP2_DATA.rawValue) || type == UInt8(NGHTTP2_HEADERS.rawValue),
            Self.has(frame, NGHTTP2_FLAG_END_STREAM), let stream = streams[frame.hd.stream_id]
        else { return 0 }
        // Reported before `mem_send` returns the frame's bytes: its flush mark is set once
        // they are in the output (`send`).
        stream.response = .handedOff
        justSent.append(stream)
        if !stream.body.complete { events.append(.answered(stream)) }
        return 0
    }

    /// A frame nghttp2 found invalid for its stream: the stream's reset is queued, so the
    /// gateway does not start on it (its head may have come in the same read).
    func invalidFrame(_ frame: nghttp2_frame) -> Int32 {
        streams[frame.hd.stream_id]?.request.streamError()
        return 0
    }

    /// One glitch; past the budget the session ends with GOAWAY ENHANCE_YOUR_CALM (a second
    /// terminate, from the caller's error path, changes nothing).
    private func glitch() -> Bool {
        guard !glitches.spend(now: LazyDeadline.now()) else { return true }
        if let session { nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM.rawValue) }
        return false
    }

    func streamClosed(_ id: Int32, _ code: UInt32) -> Int32 {
        guard let stream = streams.removeValue(forKey: id) else { return 0 }
        stream.closed = true
        events.append(.closed(stream))
        return 0
    }

    /// The data provider: the next bytes of a stream's response body, DEFERRED while its
    /// output is empty and the body goes on, EOF with the last.
    func readBody(
        _ id: Int32, into buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let stream = streams[id] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let n = min(length, stream.output.count)
        if n > 0 {
            _ = stream.output.remove(into: UnsafeMutableRawBufferPointer(start: buffer, count: n))
            stream.lastSentAt = LazyDeadline.now()
        }
        if stream.output.count == 0 {
            if stream.outputEnded {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                if let trailers = stream.trailers, let session {
                    // RFC 9113 §8.1: the trailer section ends the stream, not the DATA frame.
                    stream.trailers = nil
                    var list = HTTP2ResponseFields(trailers: trailers)
                    let rv = list.withList { nghttp2_submit_trailer(session, id, $0, $1) }
                    if rv == 0 { flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue }
                }
            } else if n == 0 {
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            }
        }
        return n
    }
}
