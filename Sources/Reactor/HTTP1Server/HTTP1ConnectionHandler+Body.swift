/// Request bodies on the connection's side: parsed from the input and handed to the
/// consumer the gateway chose (`HTTP1ServerExchange+Body`), paced, and discarded (bounded)
/// after an answer that did not read them.
extension HTTP1ConnectionHandler {
    /// Reads and drops what is left of the body, within `discardLimit`; otherwise (or when
    /// the client still waits for a 100 that never came) the connection closes after the
    /// answer instead.
    func startDiscarding(_ ex: HTTP1ServerExchange) {
        ex.body.paused = false
        if ex.body.complete {
            ex.body.consumer = .finished
            return
        }
        let remaining: UInt64? =
            if case .contentLength(let n) = ex.request.framing { n - UInt64(ex.body.bytes) } else { nil }
        if ex.request.expectsContinue && !ex.body.continueSent
            || remaining.map({ $0 > UInt64(Self.discardLimit) }) == true
        {
            ex.body.consumer = .finished
            ex.closeAfter = true
            return
        }
        ex.body.consumer = .discarding(remaining: Self.discardLimit)
        setDeadline(.body)
    }

    /// Whether body bytes are to be read for the exchange now.
    func wantsBody(_ ex: HTTP1ServerExchange) -> Bool {
        switch ex.body.consumer {
        case .collecting, .discarding: true
        case .streaming: !ex.body.paused
        case .unclaimed, .finished: false
        }
    }

    /// Parses body bytes from the front of the input and hands them on (one parser event).
    /// Runs on an empty input too: a body whose last byte came ends without more input.
    func bodyStep(_ ex: HTTP1ServerExchange) -> Bool {
        let step: (consumed: Int, event: HTTP1RequestParser.Event?)
        do {
            step = try parser.parse(firstSegment())
        } catch {
            // Framing in doubt: nothing more can be read on this connection.
            ex.closeAfter = true
            failBody(ex, .malformed)
            if case .handedOff = ex.response { closeAfterOutput() }
            return false
        }
        switch step.event {
        case nil:
            input.drain(step.consumed)
        case .body(let range):
            input.drain(range.lowerBound)
            deliver(ex, range.count)
            guard !connection.isClosed else { return false }
            input.drain(step.consumed - range.upperBound)
        case .end(let trailers):
            input.drain(step.consumed)
            ex.body.complete = true
            if deadline == .body { setDeadline(.none) }
            switch ex.body.finish() {
            case .collecting(_, let buffer, let done): done(.success(BodyChunk(queue: buffer).take()))
            case .streaming(let sink): sink.requestBodyEnd(trailers: trailers)
            default: break
            }
        case .head:
            assertionFailure("a head event inside a body")
        }
        return step.consumed > 0 || step.event != nil
    }

    /// The first `count` bytes of the input are body bytes.
    private func deliver(_ ex: HTTP1ServerExchange, _ count: Int) {
        ex.body.bytes += count
        if deadline == .body { setDeadline(.body) }
        switch ex.body.consumer {
        case .collecting(let limit, let buffer, _):
            if ex.body.bytes > limit {
                input.drain(count)
                ex.closeAfter = true
                failBody(ex, .tooLarge)
            } else {
                BodyChunk(queue: input, count: count).move(to: buffer)
            }
        case .streaming(let sink):
            guard ex.body.admitsStreamed(BodyChunk(queue: input, count: count)) else {
                input.drain(count)
                ex.closeAfter = true
                failBody(ex, .tooLarge)
                return
            }
            let before = input.count
            sink.requestBody(BodyChunk(queue: input, count: count))
            // The sink must take exactly the chunk; what it left is dropped so that the
            // parser's next ranges still line up with the input.
            let taken = before - input.count
            if taken < count, !connection.isClosed { input.drain(count - taken) }
        case .discarding(let remaining):
            input.drain(count)
            let remaining = remaining ?? .max
            if count > remaining {
                ex.body.consumer = .finished
                ex.closeAfter = true
            } else {
                ex.body.consumer = .discarding(remaining: remaining - count)
            }
        case .unclaimed, .finished:
            input.drain(count)
        }
    }

    /// Ends the body's reader with `failure` (once; nothing if it ended already).
    func failBody(_ ex: HTTP1ServerExchange, _ failure: RequestBodyFailure) {
        let consumer = ex.body.finish()
        if deadline == .body { setDeadline(.none) }
        switch consumer {
        case .collecting(_, _, let done): done(.failure(failure))
        case .streaming(let sink): sink.requestBodyFailed(failure)
        case .unclaimed, .discarding, .finished: break
        }
    }

    /// The body deadline fired: the pace is judged if its check is due, else no body byte
    /// came for `bodyTimeout`.
    func bodyDeadlinePassed() {
        guard let ex = current, let at = ex.body.paceNextAt, LazyDeadline.now() >= at - 0.005 else {
            return bodyTimedOut(.timeout)
        }
        let now = LazyDeadline.now()
        switch ex.body.judgePace(context.options.bodyPace, now: now) {
        case .onPace:
            armBodyDeadline(now: now)
        case .pastDeadline:
            bodyTimedOut(.pastDeadline)
        case .tooSlow:
            bodyTimedOut(.tooSlow)
        }
    }

    /// The reader fails for taking too long (silence, the pace), and the connection closes
    /// (after an answer the gateway gives at once, if it does).
    func bodyTimedOut(_ failure: RequestBodyFailure) {
        guard let ex = current else {
            connection.close()
            return
        }
        ex.closeAfter = true
        failBody(ex, failure)
        guard !connection.isClosed else { return }
        if case .handedOff = ex.response { closeAfterOutput() } else { connection.close() }
    }
}
