/// gRPC's `grpc-timeout` request header (gRPC over HTTP/2, "Requests"): the call's deadline
/// as up to 8 ASCII digits and a unit, H M S m u n (hours to nanoseconds).
enum GRPCTimeout {
    /// The deadline in seconds; nil for a value the spec does not allow (no deadline then:
    /// the upstream's own `timeout` still bounds the call).
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
}
