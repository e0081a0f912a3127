/// Writing the request: the head, then the client's body streamed with backpressure
/// (paused past `bodyHighWater`, resumed at `bodyLowWater`), chunked or by length.
extension UpstreamCall {
    var bodyComplete: Bool {
        if case .complete = bodyState { return true }
        return false
    }

    /// Writes what is queued; arms the response deadline once the whole request is out.
    func sendQueued() {
        // Sending or sent: a write event armed before the request went whole may still come.
        guard machine.isExchanging, machine.request != .cut, let transport else { return }
        switch transport.flush(timeout: pool.endpoint.responseTimeout) {
        case .done:
            // Resuming the body may deliver its rest at once, and queue it (a nested
            // `sendQueued` writes what the socket takes): sent only once nothing is left.
            resumeBodyIfDrained(transport)
            if machine.written(bodyComplete: bodyComplete, outputPending: transport.pendingOutput > 0) == .armRead {
                armRead()
            }
        case .pending:
            resumeBodyIfDrained(transport)
        case .failed:
            // The upstream is gone or reset the connection: stop sending and let the read
            // side tell a response that came first from a connection that died (and
            // whether a retry applies).
            abandonBody()
            transport.disarmWrite()
            transport.output.drain(transport.pendingOutput)
            if machine.writeFailed() == .armRead && !transport.armRead(timeout: pool.endpoint.responseTimeout) {
                finish(.connectionFailed)
            }
        }
    }

    func resumeBodyIfDrained(_ transport: UpstreamTransport) {
        guard case .streaming(let chunked, let remaining, true) = bodyState,
            transport.pendingOutput <= Self.bodyLowWater
        else { return }
        bodyState = .streaming(chunked: chunked, remaining: remaining, paused: false)
        body?.resume()
    }

    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool) {
        if timedOut {
            finish(.responseTimeout)
            return
        }
        sendQueued()
    }

    func transportConnected(_ transport: UpstreamTransport, error: Int32) {}

    /// A chunk of the client's body, onto the wire's queue: the HTTP/1.1 connection's output
    /// (chunk-framed if the length is unknown) or an HTTP/2 stream's DATA queue. The same
    /// accounting either way: never past the announced length, paused past `bodyHighWater`.
    func bodyChunk(_ chunk: BodyChunk) {
        guard case .streaming(let chunked, let remaining, let bodyPaused) = bodyState, h2 != nil || transport != nil
        else {
            chunk.drop()
            return
        }
        guard chunk.count > 0 else { return }
        var left = remaining
        if let r = remaining {
            // More than the Content-Length we announced would be read as the next request.
            guard UInt64(chunk.count) <= r else {
                chunk.drop()
                finish(.clientBodyFailed(.malformed))
                return
            }
            left = r - UInt64(chunk.count)
        }
        let queued: Int
        if let stream = h2 {
            chunk.move(to: stream.output)
            stream.lastActivity = LazyDeadline.now()
            queued = stream.output.count
        } else if let transport {
            if chunked { UpstreamBodyFraming.writeChunkLine(chunk.count, to: transport.output) }
            chunk.move(to: transport.output)
            if chunked { UpstreamBodyFraming.write("\r\n", to: transport.output) }
            queued = transport.pendingOutput
        } else {
            chunk.drop()
            return
        }
        var nowPaused = bodyPaused
        if !bodyPaused && left != 0 && queued > Self.bodyHighWater {
            nowPaused = true
            body?.pause()
        }
        // The last byte of a Content-Length body completes the request on the wire, whenever
        // the engine gets round to `requestBodyEnd`: an answer from now on is not early.
        bodyState = left == 0 ? .complete : .streaming(chunked: chunked, remaining: left, paused: nowPaused)
        // A body we paused must be let run to its end, or the engine never finishes it.
        if left == 0 && bodyPaused { body?.resume() }
        bodyQueued()
    }

    func bodyEnded(trailers: HTTP1Fields) {
        guard case .streaming(let chunked, let remaining, _) = bodyState, h2 != nil || transport != nil else { return }
        guard remaining ?? 0 == 0 else {
            finish(.clientBodyFailed(.malformed))
            return
        }
        let kept = forwardedTrailers(trailers)
        if h2 != nil {
            requestTrailers = kept
        } else if chunked, let transport {
            // RFC 9112 §7.1.2: the last chunk, the trailer fields, the empty line.
            UpstreamBodyFraming.write("0\r\n", to: transport.output)
            if let kept { UpstreamBodyFraming.write(fields: kept, to: transport.output) }
            UpstreamBodyFraming.write("\r\n", to: transport.output)
        }
        bodyState = .complete
        bodyQueued()
    }

    /// The client's trailer fields the request's policy lets through; nil when none.
    private func forwardedTrailers(_ trailers: HTTP1Fields) -> HTTP1Fields? {
        guard !trailers.isEmpty, let policy = request.trailerPolicy else { return nil }
        let kept = trailers.filter(names: { policy.forwardsTrailer($0) }, extraBytes: 0, extraFields: 0)
        return kept.isEmpty ? nil : kept
    }

    /// New body bytes (or its end) are queued: sent now, or once `start()` has set up.
    private func bodyQueued() {
        if let stream = h2 {
            stream.connection.wake(stream)
        } else if !queueingBody {
            sendQueued()
        }
    }

    func bodyFailed(_ failure: RequestBodyFailure) {
        guard case .streaming = bodyState else { return }
        bodyState = .abandoned
        finish(.clientBodyFailed(failure))
    }

    /// Stops forwarding the client's body: the engine keeps it paused (what it already
    /// read stays unread), and the client's connection cannot carry another request.
    func abandonBody() {
        continueTimer?.cancel()
        continueTimer = nil
        switch bodyState {
        case .streaming:
            bodyState = .abandoned
            body?.pause()
        case .awaitingContinue:
            // Never asked for: the client, still waiting for a 100, sends nothing more.
            bodyState = .abandoned
        case .complete, .abandoned:
            break
        }
    }
}

/// The call's side of the client's body stream. The engine holds the sink; the sink holds
/// the call only until the call ends (`finish` clears it), so a body the client never
/// finishes does not keep the call alive, and chunks that come after the call ended are
/// dropped (the receiver must move them).
final class UpstreamBodySink: RequestBodySink {
    var call: UpstreamCall?
    init(call: UpstreamCall) { self.call = call }

    func requestBody(_ chunk: BodyChunk) {
        if let call { call.bodyChunk(chunk) } else { chunk.drop() }
    }

    func requestBodyEnd(trailers: HTTP1Fields) { call?.bodyEnded(trailers: trailers) }
    func requestBodyFailed(_ failure: RequestBodyFailure) { call?.bodyFailed(failure) }
}
