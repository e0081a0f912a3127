/// What reading one request's body keeps, the same on HTTP/1.1 and HTTP/2: who takes the body
/// (`consumer`), how much of it came, the limits a streamed body is held to, whether the
/// gateway paused it, whether a `100 Continue` went, and the pace check (`BodyPace`), which
/// leaves the time the gateway kept the body paused out of the rate it judges.
///
/// Each protocol's handler moves the bytes; this value only keeps the account. Its methods
/// never call the consumer back: a callback could reach the exchange again while the value is
/// being changed, so the handler takes the consumer (`finish`) and calls it afterwards.
struct RequestBodyReader {
    enum Consumer {
        case unclaimed
        case collecting(limit: Int, into: ByteQueue, done: (Result<[UInt8], RequestBodyFailure>) -> Void)
        case streaming(RequestBodySink)
        /// Read and dropped. HTTP/1.1 reads at most `remaining` more bytes (past it, the
        /// connection closes instead); HTTP/2 drops all of it, crediting the flow-control
        /// windows (nil).
        case discarding(remaining: Int?)
        /// Ended or failed: nothing more is delivered.
        case finished
    }

    var consumer = Consumer.unclaimed
    /// The body's end came (the last chunk, or END_STREAM): no byte follows.
    var complete = false
    /// Body bytes received so far.
    var bytes = 0
    /// A streamed body's limits (`stream(to:limit:)`): its bytes, and its gRPC messages'.
    var streamTotal = 0
    var grpcMessages: GRPCMessageCounter?
    var paused = false
    var continueSent = false
    /// When the pace check is next due; nil when the pace has none or the body ended.
    var paceNextAt: Double?
    private var paceStart = 0.0
    private var pausedSince: Double?
    private var pausedTotal = 0.0

    /// The consumer, handed over once: the reader is finished after.
    mutating func finish() -> Consumer {
        let taken = consumer
        consumer = .finished
        paceNextAt = nil
        return taken
    }

    /// Starts the pace check as reading starts, when the pace has one.
    mutating func startPace(_ pace: BodyPace, now: Double) {
        guard pace.isActive, case .onPace(let first?) = pace.judge(elapsed: 0, active: 0, bytes: 0) else { return }
        paceStart = now
        paceNextAt = now + first
    }

    /// The gateway holds the body back; false when it already did.
    mutating func pause(now: Double) -> Bool {
        guard !paused else { return false }
        paused = true
        if paceNextAt != nil { pausedSince = now }
        return true
    }

    /// The gateway takes the body again; false when it was not paused. The paused time does
    /// not count against the client's rate.
    mutating func resume(now: Double) -> Bool {
        guard paused else { return false }
        paused = false
        if let since = pausedSince {
            pausedTotal += now - since
            pausedSince = nil
        }
        return true
    }

    /// The pace check, due now. On pace, the next check is set; otherwise the handler fails
    /// the reader with the verdict.
    mutating func judgePace(_ pace: BodyPace, now: Double) -> BodyPace.Verdict {
        let elapsed = now - paceStart
        let verdict = pace.judge(elapsed: elapsed, active: elapsed - pausedTotal, bytes: bytes)
        if case .onPace(let next) = verdict { paceNextAt = next.map { now + $0 } }
        return verdict
    }

    /// Whether a streamed body's next bytes, `chunk` (already added to `bytes` by the
    /// handler), keep it within its total and its gRPC messages within their limit; the gRPC
    /// counter reads them.
    mutating func admitsStreamed(_ chunk: BodyChunk) -> Bool {
        bytes <= streamTotal && grpcMessages?.feed(chunk) != .tooLarge
    }
}
