/// What a client makes an HTTP/2 connection do that serves no request, counted against one
/// budget per connection; past it the connection ends with GOAWAY `ENHANCE_YOUR_CALM`
/// (RFC 9113 §5.4.1). Counted, as nghttp2's later glitch limiter and Envoy's flood checks
/// count them:
/// - a stream the gateway resets with an error (`RST_STREAM` other than `NO_ERROR` or
///   `CANCEL`): what a client provokes with frames that are stream errors (a zero window
///   increment, DATA past a stream's end, a malformed trailer section), each reset after the
///   gateway may have started work — "MadeYouReset" (CVE-2025-8671), which nghttp2's reset
///   limit does not see, since it counts only the resets a client sends;
/// - an empty DATA frame that does not end its stream;
/// - a WINDOW_UPDATE past Envoy's bound for a connection (`1 + 2 × (streams opened + 10 ×
///   DATA frames sent)`, its `max_inbound_window_update_frames_per_data_frame_sent`).
///
/// The budget is a burst of 1000, refilled at 33 a second: the numbers of the reset rate
/// limit the gateway sets on nghttp2 (and nghttp2's own glitch limiter since 1.64), so that
/// whatever the client's mix, the work it can cause this way is bounded the same.
struct HTTP2GlitchBudget {
    static let burst = 1000.0
    static let perSecond = 33.0
    private var tokens = burst
    /// Monotonic seconds of the last glitch (0: none yet).
    private var at = 0.0

    private var windowUpdates = 0
    private var streamsOpened = 0
    private var dataFramesSent = 0

    /// One glitch at `now` (monotonic seconds); false once the budget is spent.
    mutating func spend(now: Double) -> Bool {
        if at > 0 { tokens = min(Self.burst, tokens + max(0, now - at) * Self.perSecond) }
        at = now
        tokens -= 1
        return tokens >= 0
    }

    mutating func streamOpened() { streamsOpened += 1 }
    mutating func dataFrameSent() { dataFramesSent += 1 }

    /// A WINDOW_UPDATE came: whether it is past the bound (a glitch).
    mutating func windowUpdateReceived() -> Bool {
        windowUpdates += 1
        return windowUpdates > 1 + 2 * (streamsOpened + 10 * dataFramesSent)
    }
}
