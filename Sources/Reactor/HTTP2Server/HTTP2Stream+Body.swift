/// The request body as the gateway reads it on HTTP/2: handed on only as it asks
/// (`collect`, `stream`, `resume`, `discard`). `Expect: 100-continue` is answered as on
/// HTTP/1.1: when the gateway says so or as the body is first asked for (RFC 9110 §10.1.1).
/// Each call acts only while the stream is on its connection.
extension HTTP2Stream {
    func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        guard let handler else { return done(.failure(.clientGone)) }
        handler.thread.check()
        guard case .unclaimed = body.consumer else {
            assertionFailure("a request body is read once")
            return done(.failure(.malformed))
        }
        let limit = min(limit, handler.context.options.maxBodySize)
        if let n = contentLength, n > UInt64(limit) {
            // Refused on its announced length, before a byte is read (and with no 100).
            body.consumer = .finished
            done(.failure(.tooLarge))
            return handler.deliverBody(self)
        }
        body.consumer = .collecting(limit: limit, into: ByteQueue(), done: done)
        startReading(on: handler)
    }

    func stream(to sink: RequestBodySink) { stream(to: sink, limit: .server) }

    func stream(to sink: RequestBodySink, limit: StreamedBodyLimit) {
        guard let handler else { return sink.requestBodyFailed(.clientGone) }
        handler.thread.check()
        guard case .unclaimed = body.consumer else {
            assertionFailure("a request body is read once")
            return sink.requestBodyFailed(.malformed)
        }
        body.streamTotal = limit.total ?? handler.context.options.maxBodySize
        body.grpcMessages = limit.messages.map(GRPCMessageCounter.init)
        if let n = contentLength, n > UInt64(body.streamTotal) {
            body.consumer = .finished
            sink.requestBodyFailed(.tooLarge)
            return handler.deliverBody(self)
        }
        body.consumer = .streaming(sink)
        startReading(on: handler)
    }

    /// The connection's read goes on (other streams share it): the stream's bytes wait in
    /// `received`, and its window stops the client.
    func pause() { _ = body.pause(now: LazyDeadline.now()) }

    func resume() {
        guard let handler else { return }
        handler.thread.check()
        let now = LazyDeadline.now()
        guard body.resume(now: now) else { return }
        lastBodyAt = now
        handler.deliverBody(self)
        handler.drive()
    }

    func discard() {
        guard let handler, case .unclaimed = body.consumer else { return }
        handler.thread.check()
        body.consumer = .discarding(remaining: nil)
        handler.deliverBody(self)
        handler.drive()
    }

    func sendContinue() {
        guard expectsContinue else { return }
        sendInterim(HTTPResponseHead(status: 100))
    }

    private func startReading(on handler: HTTP2ConnectionHandler) {
        sendContinue()
        lastBodyAt = LazyDeadline.now()
        body.startPace(handler.context.options.bodyPace, now: lastBodyAt)
        handler.deliverBody(self)
        handler.drive()
    }
}
