/// A count of events over the last few minutes, in whole-minute buckets: how the status page
/// says "recent" 5xx answers of an upstream without keeping one entry per event. The caller
/// gives the time (a monotonic clock in the worker, any number in tests), so nothing here
/// reads a clock.
struct RecentCount: Sendable {
    /// Minutes counted; events older than this fall out.
    static let minutes = 5

    /// Per bucket: the minute it counts (time / 60, rounded down) and its events. A bucket
    /// whose minute is stale is reused for the current one; an empty one counts nothing
    /// whatever its minute says.
    private var buckets = [(minute: Int, count: Int)](repeating: (minute: 0, count: 0), count: minutes)
    /// Every event ever recorded (never reset: a counter).
    private(set) var total = 0

    mutating func record(at seconds: Double) {
        let minute = Self.minute(seconds)
        let i = Self.slot(minute)
        if buckets[i].minute != minute { buckets[i] = (minute, 0) }
        buckets[i].count += 1
        total += 1
    }

    /// Events in the last `minutes` minutes as of `seconds` (the current minute included).
    func count(at seconds: Double) -> Int {
        let now = Self.minute(seconds)
        return buckets.reduce(0) { sum, b in
            b.minute <= now && now - b.minute < Self.minutes ? sum + b.count : sum
        }
    }

    private static func minute(_ seconds: Double) -> Int { Int((seconds / 60).rounded(.down)) }
    private static func slot(_ minute: Int) -> Int { ((minute % minutes) + minutes) % minutes }
}
