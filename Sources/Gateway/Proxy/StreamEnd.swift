import Reactor

/// When a streamed answer ends whatever its upstream does: an MCP `subscriptions/listen`
/// (MCP 2026-07-28: one POST answered by an SSE stream, which replaces the 2025 GET stream)
/// lasts at most the route's `mcp.listen_timeout`, and never past its token's `exp`, like a
/// tunnel. Until then the upstream's silences are bounded by the same end, not by its
/// `timeout`: a server with nothing to say keeps the stream with comments, or not at all.
struct StreamEnd {
    enum Why: String {
        case listenTimeout = "listen_timeout"
        case tokenExpired = "access token expired"
    }

    /// When, in Unix seconds (the wall clock a token's `exp` is in): fixed when the request is
    /// judged, so time its later stages take is not added.
    let at: Double
    let why: Why
    /// The last event the client gets, when the stream is an SSE one between two events at
    /// the end: an MCP listen's result, the spec's graceful close (MCPListen.closingEvent).
    var closingEvent: [UInt8]? = nil

    /// The earlier of `timeout` from `now` and `expiresAt` (Unix seconds, the token's `exp`).
    init(timeout: Double, expiresAt: Int64?, now: Double) {
        if let expiresAt, Double(expiresAt) - now < timeout {
            at = max(Double(expiresAt), now)
            why = .tokenExpired
        } else {
            at = now + timeout
            why = .listenTimeout
        }
    }

    /// Seconds left at `now`.
    func left(_ now: Double) -> Double { max(at - now, 0.001) }
}

extension ProxyExchange {
    /// Arms the end of a streamed answer (`context.streamEnd`): the call's silences are
    /// bounded past it (so the end, not a silence, is what stops the stream: the read
    /// deadline keeps coarser time than the timer), and at it the answer ends.
    func armStreamEnd(_ end: StreamEnd, _ request: inout UpstreamCall.Request) {
        let left = end.left(services.wallClock.now)
        request.idleTimeout = left + 10
        streamEndTimer = LoopTimer(loop: services.loop, seconds: left) { [weak self] in
            self?.streamEnded(end.why)
        }
    }

    /// Whether an answer so headed may end with the closing event: a 200 SSE stream, framed
    /// by its end (no length to overrun) and under no content coding.
    static func takesClosingEvent(_ head: HTTPResponseHead) -> Bool {
        guard head.status == 200, head.fields.first("Content-Length") == nil,
            head.fields.first("Content-Encoding") == nil,
            let type = head.fields.first("Content-Type")
        else { return false }
        return type.lowercased().hasPrefix("text/event-stream")
    }

    /// Moves a chunk of a stream that may end with a closing event, keeping its last bytes:
    /// the event goes out only between two events (after a blank line, SSE's event end).
    func sendTracked(_ chunk: BodyChunk) {
        let bytes = chunk.take()
        for b in bytes.suffix(4) { streamTail = streamTail << 8 | UInt32(b) }
        send(OwnedBuffer(bytes).chunk)
    }

    /// Whether what was sent ends an SSE event (or nothing was sent): a blank line as LF LF,
    /// CR LF CR LF or CR CR (HTML, "Server-sent events", the stream's grammar).
    var streamBetweenEvents: Bool {
        bytes == 0 || streamTail & 0xFFFF == 0x0A0A || streamTail == 0x0D0A_0D0A || streamTail & 0xFFFF == 0x0D0D
    }

    /// The stream's time is up. Before anything was sent (no head yet, a DPoP nonce being
    /// answered, or a head held to sign the answer whole): 504, as for any silent upstream.
    /// After: the upstream is left and the client's stream ends as a stream ends (the last
    /// chunk, or END_STREAM), with the closing event first where it fits, so an MCP client
    /// sees the subscription close and may listen again with a token that still holds.
    /// What the spool still holds goes out before the end.
    func streamEnded(_ why: StreamEnd.Why) {
        streamEndTimer = nil
        guard !done else { return }
        retryWithNonce = nil
        abandonCall()
        upstreamSeconds = services.clock() - upstreamStart
        guard responder.state == .streaming else {
            done = true
            services.answer(
                exchange, context,
                ErrorResponse.make(
                    504, error: "gateway_timeout", description: "the upstream did not answer in time",
                    requestID: context.requestID, detail: "stream ended before its answer: \(why.rawValue)"),
                upstreamSeconds: upstreamSeconds)
            selfRetain = nil
            return
        }
        if let spool, spool.pending > 0 {
            upstreamEnded = true
            return
        }
        if closingEventAllowed, let event = context.streamEnd?.closingEvent, streamBetweenEvents {
            send(OwnedBuffer(event).chunk)
        }
        // Sending may have ended the exchange (the client gone, a spool that failed).
        guard !done, responder.state == .streaming else { return }
        let responder = self.responder
        finish(status: status, detail: "stream ended: \(why.rawValue)")
        responder.finish()
    }
}
