import Glibc

/// The `Date` field line of responses (RFC 9110 §6.6.1: "An origin server with a clock …
/// MUST generate a Date header field in … 2xx, 3xx and 4xx responses"), in IMF-fixdate,
/// formatted at most once per second. One per server, so one per loop; loop-thread only.
final class HTTPDateCache {
    private let clock: () -> Int
    private var second = Int.min
    private var cached: [UInt8] = []

    /// `clock`: seconds since the epoch (injected by tests).
    init(clock: @escaping () -> Int = { time(nil) }) { self.clock = clock }

    /// "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" for the current second.
    var fieldLine: [UInt8] {
        let now = clock()
        if now != second {
            second = now
            cached = Array("Date: \(HTTPDateCache.imfFixdate(now))\r\n".utf8)
        }
        return cached
    }

    /// IMF-fixdate (RFC 9110 §5.6.7), independent of the C locale.
    static func imfFixdate(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(tm.tm_year + 1900) "
            + "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }
}
