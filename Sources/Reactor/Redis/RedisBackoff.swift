/// Delay before the next connect attempt after a failure: 100 ms doubling to 5 s, back to
/// 100 ms once a handshake succeeds. Commands sent during the delay fail at once, so an
/// unreachable Redis costs callers nothing and receives one attempt per delay, not one per
/// request.
struct RedisBackoff {
    let initial: Double
    let maximum: Double
    private var nextDelay: Double

    init(initial: Double = 0.1, maximum: Double = 5) {
        self.initial = initial
        self.maximum = maximum
        self.nextDelay = initial
    }

    /// The delay to wait now; the one after it doubles, up to `maximum`.
    mutating func next() -> Double {
        let delay = nextDelay
        nextDelay = min(nextDelay * 2, maximum)
        return delay
    }

    /// After a successful handshake.
    mutating func reset() { nextDelay = initial }
}
