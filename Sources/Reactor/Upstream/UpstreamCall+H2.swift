/// A call to an HTTP/2 upstream (`UpstreamEndpoint.http2`): a stream on one of the pool's
/// multiplexed connections instead of a connection of its own. The delegate sees the same
/// events in the same order as over HTTP/1.1, plus the trailer section
/// (`upstreamTrailers`) before `upstreamComplete`. The body streams with the same
/// backpressure; the response is held back per stream by flow control while the delegate
/// pauses (the connection's other streams go on). No `Expect: 100-continue` (the body goes
/// at once) and no upgrade: HTTP/2 has neither (RFC 9113 §8.6).
extension UpstreamCall {
    func startH2() {
        guard !request.upgrade else {
            finish(.invalidResponse)
            return
        }
        let connection = pool.acquireH2()
        h2 = UpstreamH2Stream(connection: connection)
        machine.connecting()
        startBody()
        guard !machine.isFinished else { return }
        connection.add(self)
    }

    /// nghttp2 took the request: the stream is open, its response deadline runs.
    func h2Submitted() {
        guard let stream = h2, machine.connected() else { return }
        stream.lastActivity = LazyDeadline.now()
        let timeout = request.idleTimeout ?? pool.endpoint.responseTimeout
        // Checked a few times per timeout, against the last byte's time: one timer per call
        // rather than one update per frame.
        stream.timer = LoopTimer(loop: pool.loop, seconds: max(timeout / 4, 0.05), repeating: true) {
            [weak self] in
            guard let self, let stream = self.h2, !self.machine.isPaused else { return }
            if LazyDeadline.now() - stream.lastActivity >= timeout { self.finish(.responseTimeout) }
        }
    }

    /// Tells the delegate what the stream recorded, in order, as far as a pause allows.
    func h2Deliver() {
        guard let stream = h2, machine.isExchanging else { return }
        if stream.requestEnded { machine.requestEnded() }
        if stream.malformed {
            finish(.invalidResponse)
            return
        }
        while !stream.interims.isEmpty, !machine.gotHead {
            let head = stream.interims.removeFirst()
            delegate?.upstreamInterim(head)
            guard machine.isExchanging else { return }
        }
        if let head = stream.head {
            stream.head = nil
            // A head before the whole request went is no early refusal on HTTP/2: a
            // bidirectional stream (gRPC's) answers as it reads. Only a response that ends
            // first stops the body (`finish` abandons it; RFC 9113 §8.1).
            machine.streamHeadReceived()
            delegate?.upstreamHead(head)
            guard machine.isExchanging else { return }
        }
        guard machine.gotHead, !machine.isPaused else {
            if let code = stream.closeCode, !(code == 0 && stream.ended) { h2StreamFailed(code) }
            return
        }
        let held = stream.received.count
        if held > 0 {
            delegate?.upstreamBody(BodyChunk(queue: stream.received, count: held))
            let taken = held - stream.received.count
            if taken < held { stream.received.drain(held - taken) }
            stream.connection.consumed(stream, held)
            guard machine.isExchanging else { return }
        }
        if stream.ended && !machine.isPaused && stream.received.count == 0 {
            if let trailers = stream.trailers {
                stream.trailers = nil
                delegate?.upstreamTrailers(trailers)
                guard machine.isExchanging else { return }
            }
            finish(nil)
        } else if let code = stream.closeCode, !(code == 0 && stream.ended) {
            h2StreamFailed(code)
        }
    }

    /// The stream closed without a whole response: a reset, or the upstream refusing it.
    private func h2StreamFailed(_ code: UInt32) {
        // REFUSED_STREAM means no part of the request was processed (RFC 9113 §8.7): it
        // may go again when its body is whole and small enough to have been kept. Up to
        // three times: a server may refuse a stream its count still holds a moment after
        // the client saw it close (gRPC's C core does, at its stream limit).
        if code == 7, !machine.gotHead, refusals < 3, body == nil || bodyComplete, let stream = h2 {
            let replay = body == nil ? nil : stream.takeReplay()
            if body == nil || replay != nil {
                refusals += 1
                // After 5, 10, 20 ms: at once, the same stream count refuses it again.
                h2Retry(body: replay, after: 0.005 * Double(1 << (refusals - 1)))
                return
            }
        }
        finish(.connectionFailed)
    }

    /// The connection under the stream failed.
    func h2ConnectionLost(_ failure: UpstreamFailure) {
        guard !machine.isFinished else { return }
        if let stream = h2,
            machine.connectionLost(
                mayGoAgain: stream.id > 0 && body == nil && stream.received.count == 0 && failure == .connectionFailed
                    && request.method.isIdempotent) == .retry
        {
            // A connection the upstream closed as the request went: as a stale keep-alive
            // connection over HTTP/1.1, retried once.
            h2Retry()
            return
        }
        finish(failure)
    }

    /// `body`: the request body whole, for a call that had one; `delay`: seconds to wait
    /// first (the call has no stream meanwhile; `finish` cancels the wait).
    private func h2Retry(body: ByteQueue? = nil, after delay: Double = 0) {
        machine.streamGoesAgain()
        if let stream = h2 {
            stream.timer?.cancel()
            stream.connection.remove(self, stream)
            h2 = nil
        }
        guard delay <= 0 else {
            connectTimer = LoopTimer(loop: pool.loop, seconds: delay) { [weak self] in
                guard let self, self.machine.isConnecting, self.h2 == nil else { return }
                self.connectTimer = nil
                self.h2Retry(body: body)
            }
            return
        }
        let connection = pool.acquireH2()
        let stream = UpstreamH2Stream(connection: connection)
        if let body { stream.output.append(allOf: body) }
        h2 = stream
        connection.add(self)
    }

    /// The stream's part of `finish`: the stream leaves its connection (reset if open).
    func h2Finish() {
        guard let stream = h2 else { return }
        h2 = nil
        stream.timer?.cancel()
        stream.timer = nil
        stream.connection.remove(self, stream)
    }

    func h2Resume() {
        guard let stream = h2 else { return }
        stream.lastActivity = LazyDeadline.now()
        // On the next loop turn, outside the caller's stack (as over HTTP/1.1).
        pool.loop.execute { [weak self] in self?.h2Deliver() }
    }

    // MARK: The request body (queued by `bodyChunk`, taken by the data provider)

    /// The provider took the queue down to the low-water mark: the client's body goes on.
    func h2ResumeBodyIfDrained() {
        guard let stream = h2, stream.output.count <= Self.bodyLowWater,
            case .streaming(let chunked, let remaining, true) = bodyState
        else { return }
        bodyState = .streaming(chunked: chunked, remaining: remaining, paused: false)
        body?.resume()
    }
}
