/// The window of NumericDates (RFC 7519 §2) and lifetimes the gateway admits from anything it
/// reads: a token's claims, an AS's answer, a signature's parameters, a stored session.
///
/// The number a signer chose is not trusted to be sane: Int64 arithmetic with the clock on a
/// value near ±2^63 traps, and a trap stops every worker of the process. A value outside the
/// window is refused where the credential is admitted, so that everything after admission
/// (the clock, a leeway, a `max_age`, a TTL, each bounded too) adds and subtracts within
/// Int64 by a margin of billions of years.
public enum NumericDate {
    /// From the epoch to the last second of the year 9999: no real credential says otherwise.
    /// Negative dates are before any key that could have signed them.
    public static let range: ClosedRange<Int64> = 0...253_402_300_799
    /// The longest lifetime an answer's `expires_in` is taken for: ten years. Longer is
    /// read as this (an AS may say "never" with a huge number).
    public static let longestLifetime: Int64 = 315_360_000

    /// Whether `seconds` is a NumericDate the gateway admits.
    @inline(__always)
    public static func admits(_ seconds: Int64) -> Bool { range.contains(seconds) }

    /// An `expires_in`-style lifetime (RFC 6749 §5.1) clamped to 0…`longestLifetime`.
    @inline(__always)
    public static func lifetime(_ seconds: Int64) -> Int64 { min(max(seconds, 0), longestLifetime) }
}

extension JSONValue {
    /// An integral number that is a NumericDate within `NumericDate.range`; nil for anything
    /// else (absent, not a number, out of the window). Read every date claim through this
    /// rather than `int64`, so no value near Int64's ends reaches arithmetic.
    public var numericDate: Int64? {
        guard let v = int64, NumericDate.admits(v) else { return nil }
        return v
    }
}

extension Int64 {
    /// `self + other`, held at Int64's ends instead of trapping: for sums of an admitted date
    /// with a configured span, where no window bounds the span by construction.
    @inline(__always)
    public func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, held at Int64's ends instead of trapping.
    @inline(__always)
    public func saturatingSubtract(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}
