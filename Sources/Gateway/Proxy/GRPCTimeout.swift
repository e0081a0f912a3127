/// gRPC's `grpc-timeout` request header (gRPC over HTTP/2, "Requests"): the call's deadline
/// as up to 8 ASCII digits and a unit, H M S m u n (hours to nanoseconds).
enum GRPCTimeout {
    /// The deadline in seconds; nil for a value the spec does not allow ("TimeoutValue →
    /// {positive integer as ASCII string of at most 8 digits}"): a sign, another unit, no
    /// unit, nine digits.
    static func seconds(_ value: String) -> Double? {
        let bytes = Array(value.utf8)
        guard bytes.count >= 2, bytes.count <= 9 else { return nil }
        var n: UInt64 = 0
        for b in bytes.dropLast() {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            n = n * 10 + UInt64(b - 0x30)
        }
        let unit: Double
        switch bytes.last {
        case UInt8(ascii: "H"): unit = 3600
        case UInt8(ascii: "M"): unit = 60
        case UInt8(ascii: "S"): unit = 1
        case UInt8(ascii: "m"): unit = 1e-3
        case UInt8(ascii: "u"): unit = 1e-6
        case UInt8(ascii: "n"): unit = 1e-9
        default: return nil
        }
        return Double(n) * unit
    }

    /// `seconds` as a header value: the finest unit whose count fits the 8 digits, rounded up
    /// (a deadline said shorter than it is would cut a call the client allowed).
    static func value(_ seconds: Double) -> String {
        // Multiplied where a unit is a fraction of a second: 0.05 / 1e-9 is 50000000.000000007.
        let counts: [(Character, Double)] = [
            ("n", seconds * 1e9), ("u", seconds * 1e6), ("m", seconds * 1e3), ("S", seconds), ("M", seconds / 60),
            ("H", seconds / 3600)
        ]
        for (unit, count) in counts {
            let whole = max(count, 0).rounded(.up)
            if whole <= 99_999_999 { return "\(Int(whole))\(unit)" }
        }
        return "99999999H"
    }
}
