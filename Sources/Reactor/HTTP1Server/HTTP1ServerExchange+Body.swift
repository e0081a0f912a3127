/// The request body as the gateway reads it: only once it asks (`collect`, `stream`,
/// `discard`); the connection discards (bounded) a body an answer did not read.
/// `Expect: 100-continue` is answered when the gateway says so (`sendContinue`) or when the
/// body is first asked for, never before (RFC 9110 §10.1.1). Each call acts only while this
/// exchange is its connection's current one.
extension HTTP1ServerExchange {
    func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        guard let handler = active else { return done(.failure(.clientGone)) }
        handler.thread.check()
        guard case .unclaimed = body.consumer else {
            assertionFailure("a request body is read once")
            return done(.failure(.malformed))
        }
        let limit = min(limit, handler.context.options.maxBodySize)
        if body.complete {
            body.consumer = .finished
            return done(.success([]))
        }
        if case .contentLength(let n) = request.framing, n > UInt64(limit) {
            // Refused on its announced length, before a byte is read (and with no 100).
            body.consumer = .finished
            closeAfter = true
            return done(.failure(.tooLarge))
        }
        body.consumer = .collecting(limit: limit, into: ByteQueue(), done: done)
        startReading(on: handler)
    }

    func stream(to sink: RequestBodySink) { stream(to: sink, limit: .server) }

    func stream(to sink: RequestBodySink, limit: StreamedBodyLimit) {
        guard let handler = active else { return sink.requestBodyFailed(.clientGone) }
        handler.thread.check()
        guard case .unclaimed = body.consumer else {
            assertionFailure("a request body is read once")
            return sink.requestBodyFailed(.malformed)
        }
        if body.complete {
            body.consumer = .finished
            return sink.requestBodyEnd(trailers: HTTP1Fields())
        }
        body.streamTotal = limit.total ?? handler.context.options.maxBodySize
        body.grpcMessages = limit.messages.map(GRPCMessageCounter.init)
        if case .contentLength(let n) = request.framing, n > UInt64(body.streamTotal) {
            body.consumer = .finished
            closeAfter = true
            return sink.requestBodyFailed(.tooLarge)
        }
        body.consumer = .streaming(sink)
        startReading(on: handler)
    }

    func pause() {
        guard let handler = active, body.pause(now: LazyDeadline.now()) else { return }
        if handler.deadline == .body { handler.setDeadline(.none) }
        handler.drive()
    }

    func resume() {
        guard let handler = active, body.resume(now: LazyDeadline.now()) else { return }
        if !body.complete, case .streaming = body.consumer { handler.setDeadline(.body) }
        handler.drive()
    }

    func discard() {
        guard let handler = active, case .unclaimed = body.consumer else { return }
        handler.startDiscarding(self)
        handler.drive()
    }

    /// `100 Continue` to a client that waits for it (RFC 9110 §15.2.1), once, before any
    /// answer: when the gateway says so (a relayed upstream 100), or as the body is first read.
    func sendContinue() {
        guard let handler = active, expectsContinue else { return }
        body.continueSent = true
        handler.connection.output.append("HTTP/1.1 100 Continue\r\n\r\n")
        handler.connection.flush()
    }

    private func startReading(on handler: HTTP1ConnectionHandler) {
        sendContinue()
        // One pace check per body, folded into the connection's one deadline (`setDeadline`).
        body.startPace(handler.context.options.bodyPace, now: LazyDeadline.now())
        handler.setDeadline(.body)
        handler.drive()
    }
}
