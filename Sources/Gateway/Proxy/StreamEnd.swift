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

/// The end of a streamed answer (`StreamEnd`), as a response stage: the call's silences are
/// bounded past it (so the end, not a silence, is what stops the stream: the read deadline
/// keeps coarser time than the timer), and at it the answer ends, with the closing event
/// first where the stream is between two events.
final class StreamEndStage: ResponseStage {
    let end: StreamEnd
    private var timer: LoopTimer?
    /// The stream may end with the closing event (its head lets it: `takesClosingEvent`).
    private var closingEventAllowed = false
    /// The last four bytes passed on, and whether any were.
    private var tail: UInt32 = 0
    private var sentAny = false

    init(_ end: StreamEnd) {
        self.end = end
        super.init(position: .streamEnd)
    }

    override func willSend(_ request: inout UpstreamCall.Request, to pool: UpstreamPool) {
        let services = exchange.services
        let left = end.left(services.wallClock.now)
        // A second try (a DPoP nonce answered) keeps the bound on silences too.
        request.idleTimeout = left + 10
        guard timer == nil else { return }
        let why = end.why
        timer = LoopTimer(loop: services.loop, seconds: left) { [weak self] in self?.ended(why) }
    }

    override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        if end.closingEvent != nil { closingEventAllowed = Self.takesClosingEvent(head) }
        next.head(head, bodyLength: bodyLength)
    }

    override func body(_ chunk: BodyChunk) {
        guard closingEventAllowed else { return next.body(chunk) }
        let bytes = chunk.take()
        for b in bytes.suffix(4) { tail = tail << 8 | UInt32(b) }
        if !bytes.isEmpty { sentAny = true }
        next.body(ByteQueue(bytes).chunk)
    }

    override func finished() {
        timer?.cancel()
        timer = nil
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

    /// Whether what was passed on ends an SSE event (or nothing was): a blank line as LF LF,
    /// CR LF CR LF or CR CR (HTML, "Server-sent events", the stream's grammar).
    var betweenEvents: Bool {
        !sentAny || tail & 0xFFFF == 0x0A0A || tail == 0x0D0A_0D0A || tail & 0xFFFF == 0x0D0D
    }

    /// The stream's time is up. Before anything was sent (no head yet, a DPoP nonce being
    /// answered, or a head held to sign the answer whole): 504, as for any silent upstream.
    /// After: the upstream is left and the client's stream ends as a stream ends (the last
    /// chunk, or END_STREAM), with the closing event first where it fits, so an MCP client
    /// sees the subscription close and may listen again with a token that still holds. What
    /// the spool still holds goes out before the event and the end.
    private func ended(_ why: StreamEnd.Why) {
        timer = nil
        let exchange: any ResponseControl = self.exchange
        guard !exchange.isDone else { return }
        guard exchange.headSent else {
            exchange.answerInstead(
                ErrorResponse.gatewayTimeout(
                    exchange.context.requestID, detail: "stream ended before its answer: \(why.rawValue)"),
                upstreamError: nil)
            return
        }
        exchange.leaveUpstream()
        if closingEventAllowed, let event = end.closingEvent, betweenEvents {
            next.body(ByteQueue(event).chunk)
        }
        // Sending may have ended the exchange (the client gone, a spool that failed).
        guard !exchange.isDone, exchange.headSent else { return }
        next.end(detail: "stream ended: \(why.rawValue)")
    }
}
