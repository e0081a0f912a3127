import Glibc

/// RFC 3339 §5.6 date-times, to and from Unix seconds (fractions of a second dropped).
enum RFC3339 {
    static func seconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var n = 0
            for c in b[from..<(from + count)] {
                guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
                n = n * 10 + Int(c - UInt8(ascii: "0"))
            }
            return n
        }
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"), b[13] == UInt8(ascii: ":"),
            b[16] == UInt8(ascii: ":"), let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") { i += 1 }
            guard i > start else { return nil }
        }
        var offset = 0
        guard i < b.count else { return nil }
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let h = number(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"), let m = number(i + 4, 2),
                h < 24, m < 60
            else { return nil }
            offset = (h * 60 + m) * 60 * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        default: return nil
        }
        guard i == b.count else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let t = timegm(&parts)
        // timegm normalizes 31 February to 3 March: a day the month does not have is refused.
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        // An offset may carry a time past the years a date-fullyear can write (§5.6, 4DIGIT):
        // such a time could not be written back, so it is not read either.
        let utc = Int64(t) - Int64(offset)
        guard utc >= firstSecond, utc <= lastSecond else { return nil }
        return utc
    }

    /// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
    static let firstSecond: Int64 = -62_167_219_200
    static let lastSecond: Int64 = 253_402_300_799

    static func text(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        // date-fullyear is four digits (RFC 3339 §5.6): year 360 is `0360`.
        let year = String(parts.tm_year + 1900)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year
            + "-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
