internal import CNghttp2

/// nghttp2's callbacks (wired in `UpstreamH2Session`): each records on the stream's call
/// and queues it in `touched`; nothing here calls a delegate. A non-zero return is
/// `NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE`: nghttp2 resets that stream, the others go on.
extension UpstreamH2Connection {
    private static let resetStream = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue

    private func stream(_ id: Int32) -> (UpstreamCall, UpstreamH2Stream)? {
        guard let call = streams[id], let stream = call.h2 else { return nil }
        return (call, stream)
    }

    private func touch(_ call: UpstreamCall, _ stream: UpstreamH2Stream) {
        guard !stream.touched else { return }
        stream.touched = true
        touched.append(call)
    }

    func beginHeaders(_ frame: nghttp2_frame) -> Int32 {
        guard let (_, stream) = stream(frame.hd.stream_id) else { return 0 }
        stream.fields = HTTP1Fields()
        stream.fieldBytes = 0
        stream.status = 0
        return 0
    }

    func header(_ frame: nghttp2_frame, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let (_, stream) = stream(frame.hd.stream_id) else { return 0 }
        // Bounded as an HTTP/1.1 head or trailer section is (name, ": ", value, CRLF).
        stream.fieldBytes += name.count + value.count + 4
        guard stream.fieldBytes <= pool.limits.maxHeaderBytes else {
            stream.malformed = true
            return Self.resetStream
        }
        guard name.first == UInt8(ascii: ":") else {
            stream.fields.append(name: name, value: value)
            return 0
        }
        // nghttp2 lets only response pseudo-headers through (RFC 9113 §8.3.2): `:status`,
        // three digits, in a head; none in trailers.
        guard !stream.headSeen, value.count == 3, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            stream.malformed = true
            return Self.resetStream
        }
        stream.status = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return 0
    }

    func frameReceived(_ frame: nghttp2_frame) -> Int32 {
        if frame.hd.type == UInt8(NGHTTP2_SETTINGS.rawValue), frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 {
            settingsReceived = true
            return 0
        }
        guard let (call, stream) = stream(frame.hd.stream_id) else { return 0 }
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch frame.hd.type {
        case UInt8(NGHTTP2_HEADERS.rawValue):
            if stream.headSeen {
                stream.trailers = stream.fields
            } else if stream.status < 200 {
                // 101 is not HTTP/2's (RFC 9113 §8.6); nghttp2 refuses it before here.
                if stream.status != 100 {
                    stream.interims.append(HTTPResponseHead(status: stream.status, fields: stream.fields))
                }
            } else {
                stream.headSeen = true
                var head = HTTPResponseHead(status: stream.status, fields: stream.fields)
                head.listsConnectionOptions = false
                // A head that ends the stream has no body: said as length 0, so an HTTP/2
                // client gets one HEADERS frame (a gRPC trailers-only answer stays one).
                if endStream { head.bodyLength = 0 }
                stream.head = head
            }
        case UInt8(NGHTTP2_DATA.rawValue):
            break
        default:
            return 0
        }
        if endStream { stream.ended = true }
        stream.lastActivity = LazyDeadline.now()
        touch(call, stream)
        return 0
    }

    func dataReceived(_ id: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard let (call, stream) = stream(id) else {
            // No call waits for it any more (reset by us): credit the connection.
            if let session { nghttp2_session_consume_connection(session, bytes.count) }
            return 0
        }
        stream.received.append(bytes)
        stream.lastActivity = LazyDeadline.now()
        touch(call, stream)
        return 0
    }

    func streamClosed(_ id: Int32, _ code: UInt32) -> Int32 {
        guard let (call, stream) = stream(id) else { return 0 }
        stream.closeCode = code
        streams.removeValue(forKey: id)
        touch(call, stream)
        return 0
    }

    /// The data provider: the next bytes of a stream's request body, DEFERRED while none
    /// are queued and the body goes on, EOF with the last (and, when the client's trailer
    /// fields go on, no END_STREAM: the trailing HEADERS end the stream, RFC 9113 §8.1).
    func readBody(
        _ id: Int32, into buffer: UnsafeMutablePointer<UInt8>, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let (call, stream) = stream(id) else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let n = min(length, stream.output.count)
        if n > 0 {
            _ = stream.output.remove(into: UnsafeMutableRawBufferPointer(start: buffer, count: n))
            stream.keepForReplay(UnsafeRawBufferPointer(start: buffer, count: n))
        }
        if stream.output.count == 0 {
            if call.bodyComplete {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                // nghttp2 lets the read callback submit the trailer section itself. A
                // replay after REFUSED_STREAM submits it again from the call.
                if let trailers = call.requestTrailers, let session {
                    var list = HTTP2ResponseFields(trailers: trailers)
                    if list.withList({ nghttp2_submit_trailer(session, id, $0, $1) }) == 0 {
                        flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
                    }
                }
                stream.requestEnded = true
                touch(call, stream)
            } else if n == 0 {
                stream.deferred = true
                return Int(NGHTTP2_ERR_DEFERRED.rawValue)
            }
        }
        return n
    }
}
