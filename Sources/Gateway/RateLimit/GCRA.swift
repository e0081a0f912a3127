/// The Generic Cell Rate Algorithm (ITU-T I.371 §4.4.2, "virtual scheduling"), as rate
/// limiters use it: a key's whole state is one time, its theoretical arrival time (TAT),
/// the moment its budget would be full again. A request at `now` moves it on by one
/// emission interval; it is allowed if the TAT stays within `burst` intervals of `now`.
/// Exact at any instant (no window edges that let two windows' worth through), O(1) per key,
/// and a key's state can be dropped once its TAT has passed. All times in microseconds.
struct GCRA: Sendable, Hashable {
    /// Microseconds between two requests at the steady rate.
    let interval: Int64
    /// How many requests may come at once.
    let burst: Int64

    init(rate: RateLimitRate, burst: Int) {
        interval = max(1, Int64(rate.seconds) * 1_000_000 / Int64(rate.count))
        self.burst = Int64(max(1, burst))
    }

    /// How far ahead of `now` the TAT may go.
    var tolerance: Int64 { interval * burst }

    /// The answer for one request.
    struct Decision: Sendable, Equatable {
        var allowed: Bool
        /// Requests that may still come at once after this one.
        var remaining: Int
        /// Refused: how long until one would be allowed (µs); 0 when allowed.
        var retryAfter: Int64
        /// How long until the budget is whole again (µs).
        var reset: Int64
    }

    /// The decision for a request at `now` on a key whose TAT is `tat` (nil: no state, a
    /// full budget), and the TAT to keep (nil: unchanged, the request was refused).
    func take(tat stored: Int64?, now: Int64) -> (Decision, newTAT: Int64?) {
        let tat = max(stored ?? now, now)
        let next = tat + interval
        if next - now > tolerance {
            let wait = next - now - tolerance
            return (Decision(allowed: false, remaining: 0, retryAfter: wait, reset: tat - now), nil)
        }
        let remaining = Int((tolerance - (next - now)) / interval)
        return (Decision(allowed: true, remaining: remaining, retryAfter: 0, reset: next - now), next)
    }
}
