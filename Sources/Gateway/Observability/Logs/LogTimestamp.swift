import Foundation
import Reactor

/// A log line's time, `2026-11-25T12:00:10.123Z` (RFC 3339 §5.6, UTC, milliseconds),
/// formatted once per millisecond: within one the bytes are reused, within one second only
/// the three millisecond digits change, and the calendar (`gmtime_r`) is consulted once a
/// second at most. nginx caches its log time the same way. One per worker (not shared).
struct LogTimestamp {
    static let length = 24
    private var text = [UInt8](repeating: UInt8(ascii: "0"), count: length)
    private var millis: Int64 = -1
    private var second: Int64 = .min

    init() {}

    /// Appends the text for now (the wall clock, `CLOCK_REALTIME`), `length` bytes.
    mutating func append(to out: inout OutputSpan<UInt8>) {
        update(Self.nowMillis())
        out.append(copying: text.span)
    }

    private static func nowMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Appends the text for a time in milliseconds since the Unix epoch (what the tests
    /// hold the format to).
    mutating func append(unixMillis: Int64, to out: inout [UInt8]) {
        update(unixMillis)
        out.append(contentsOf: text)
    }

    private mutating func update(_ unixMillis: Int64) {
        if unixMillis != millis {
            let sec = unixMillis >= 0 ? unixMillis / 1000 : (unixMillis - 999) / 1000
            if sec != second { formatSecond(sec) }
            let ms = Int(unixMillis - sec * 1000)
            text[20] = UInt8(ascii: "0") + UInt8(ms / 100)
            text[21] = UInt8(ascii: "0") + UInt8(ms / 10 % 10)
            text[22] = UInt8(ascii: "0") + UInt8(ms % 10)
            millis = unixMillis
        }
    }

    private mutating func formatSecond(_ sec: Int64) {
        var t = time_t(sec)
        var parts = tm()
        gmtime_r(&t, &parts)
        func put(_ value: Int32, at offset: Int, digits: Int) {
            var v = Int(value)
            for k in stride(from: offset + digits - 1, through: offset, by: -1) {
                text[k] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
        }
        put(parts.tm_year + 1900, at: 0, digits: 4)
        text[4] = UInt8(ascii: "-")
        put(parts.tm_mon + 1, at: 5, digits: 2)
        text[7] = UInt8(ascii: "-")
        put(parts.tm_mday, at: 8, digits: 2)
        text[10] = UInt8(ascii: "T")
        put(parts.tm_hour, at: 11, digits: 2)
        text[13] = UInt8(ascii: ":")
        put(parts.tm_min, at: 14, digits: 2)
        text[16] = UInt8(ascii: ":")
        put(parts.tm_sec, at: 17, digits: 2)
        text[19] = UInt8(ascii: ".")
        text[23] = UInt8(ascii: "Z")
        second = sec
    }
}
