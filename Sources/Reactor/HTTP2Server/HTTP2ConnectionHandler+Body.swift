internal import CNghttp2

/// Request bodies on HTTP/2, the connection's side: DATA frames collect in the stream's
/// `received` buffer and are handed on only as the gateway asks (`HTTP2Stream+Body`); bytes
/// are credited to the client's stream and connection windows (`nghttp2_session_consume`)
/// only once handed on or dropped, so an unread or paused body stops the client at its
/// window instead of filling memory.
extension HTTP2ConnectionHandler {
    /// Whether the stream's body is being read now (its silence is timed).
    func readsBody(_ s: HTTP2Stream) -> Bool {
        guard s.started, !s.body.complete else { return false }
        switch s.body.consumer {
        case .collecting: return true
        case .streaming: return !s.body.paused
        case .unclaimed, .discarding, .finished: return false
        }
    }

    /// Hands what `received` holds to the body's reader (or drops it), and the end once
    /// the client's END_STREAM came and everything before it was handed on.
    func deliverBody(_ s: HTTP2Stream) {
        let n = s.received.count
        switch s.body.consumer {
        case .unclaimed:
            return
        case .collecting(let limit, let buffer, let done):
            if n > 0 {
                s.body.bytes += n
                guard s.body.bytes <= limit else { return tooLarge(s) }
                BodyChunk(queue: s.received, count: n).move(to: buffer)
                consume(s, n)
            }
            if s.body.complete {
                s.body.consumer = .finished
                done(.success(BodyChunk(queue: buffer).take()))
            }
        case .streaming(let sink):
            guard !s.body.paused else { return }
            if n > 0 {
                s.body.bytes += n
                guard s.body.admitsStreamed(BodyChunk(queue: s.received, count: n)) else { return tooLarge(s) }
                sink.requestBody(BodyChunk(queue: s.received, count: n))
                // The sink must take exactly the chunk; what it left is dropped.
                let left = s.received.count
                if left > 0 { s.received.drain(left) }
                consume(s, n)
            }
            if s.body.complete, case .streaming = s.body.consumer {
                s.body.consumer = .finished
                let trailers = s.requestTrailers
                s.requestTrailers = HTTP1Fields()
                sink.requestBodyEnd(trailers: trailers)
            }
        case .discarding, .finished:
            if n > 0 {
                s.received.drain(n)
                consume(s, n)
            }
        }
    }

    /// The body's pace check is due (`BodyPace`, as HTTP/1.1 judges it): on pace, the next
    /// check; past the total deadline or under the minimum rate, the reader fails (the
    /// gateway answers 408 and the stream is reset after it).
    func judgePace(_ s: HTTP2Stream) {
        switch s.body.judgePace(context.options.bodyPace, now: LazyDeadline.now()) {
        case .onPace: break
        case .pastDeadline: failBody(s, .pastDeadline)
        case .tooSlow: failBody(s, .tooSlow)
        }
    }

    /// Past the body limit, or a gRPC message past its own: the reader fails, and what
    /// follows is dropped (the answer to the failure then resets the stream, RFC 9113 §8.1).
    private func tooLarge(_ s: HTTP2Stream) {
        let n = s.received.count
        if n > 0 {
            s.received.drain(n)
            consume(s, n)
        }
        failBody(s, .tooLarge)
    }

    /// Ends the body's reader with `failure` (once; nothing if it ended already). Bytes
    /// that still come are dropped.
    func failBody(_ s: HTTP2Stream, _ failure: RequestBodyFailure) {
        switch s.body.finish() {
        case .collecting(_, _, let done): done(.failure(failure))
        case .streaming(let sink): sink.requestBodyFailed(failure)
        case .unclaimed, .discarding, .finished: break
        }
    }

    /// Credits `n` body bytes to the client's windows (sent with the next frames).
    private func consume(_ s: HTTP2Stream, _ n: Int) {
        guard let session else { return }
        if s.closed {
            nghttp2_session_consume_connection(session, n)
        } else {
            nghttp2_session_consume(session, s.id, n)
        }
    }
}
