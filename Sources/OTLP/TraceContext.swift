/// A trace's 16-byte id (W3C Trace Context §3.2.2.3), as two big-endian halves.
public struct TraceID: Hashable, Sendable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// All zeros is not a trace id (§3.2.2.3).
    public var isValid: Bool { high != 0 || low != 0 }
}

/// The trace context a request carries in `traceparent` (W3C Trace Context Level 1 §3.2):
/// the trace it belongs to, the span of the caller that sent it, and whether that caller
/// sampled it. Pure; no I/O.
public struct TraceContext: Sendable, Equatable {
    public var traceID: TraceID
    /// The sender's span (`parent-id`, §3.2.2.4): the parent of the receiver's span.
    public var spanID: UInt64
    /// The `sampled` trace flag (§3.2.2.5.1).
    public var sampled: Bool

    public init(traceID: TraceID, spanID: UInt64, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// `version "-" trace-id "-" parent-id "-" trace-flags` (§3.2.2), lowercase hex.
    /// nil when the value is not one (then the receiver starts a trace of its own and ignores
    /// `tracestate`, §3.3.1). A later version is read as version 00 when its first 55
    /// characters are one and what follows starts with `-` (§4.3); version `ff` is invalid.
    public static func parse(_ value: String) -> TraceContext? {
        let v = Array(value.utf8)
        guard v.count >= 55, v[2] == 0x2D, v[35] == 0x2D, v[52] == 0x2D,
            let version = hex(v, 0, 2), version != 0xFF,
            version != 0 ? (v.count == 55 || v[55] == 0x2D) : v.count == 55,
            let high = hex(v, 3, 16), let low = hex(v, 19, 16),
            let parent = hex(v, 36, 16), let flags = hex(v, 53, 2)
        else { return nil }
        let id = TraceID(high: high, low: low)
        guard id.isValid, parent != 0 else { return nil }
        return TraceContext(traceID: id, spanID: parent, sampled: flags & 1 == 1)
    }

    /// The `traceparent` value that names `spanID` as the parent (version 00).
    public var traceparent: String {
        let bytes = traceparentBytes
        return String(decoding: bytes.indices.map { bytes[$0] }, as: UTF8.self)
    }

    /// The same value in bytes, on the stack: what a proxied request's header is written
    /// from, with no string made for it.
    public var traceparentBytes: InlineArray<55, UInt8> {
        var out = InlineArray<55, UInt8>(repeating: 0x2D)  // "-" where the separators go
        out[0] = 0x30
        out[1] = 0x30
        Self.writeHex(traceID.high, into: &out, at: 3)
        Self.writeHex(traceID.low, into: &out, at: 19)
        Self.writeHex(spanID, into: &out, at: 36)
        out[53] = 0x30
        out[54] = sampled ? 0x31 : 0x30
        return out
    }

    private static func writeHex(_ n: UInt64, into out: inout InlineArray<55, UInt8>, at start: Int) {
        for i in 0..<16 {
            let d = UInt8(truncatingIfNeeded: n >> UInt64(60 - 4 * i)) & 0xF
            out[start + i] = d < 10 ? 0x30 + d : 0x57 + d
        }
    }

    /// A `tracestate` value to pass on: at most 512 bytes and 32 list members (§3.3.1.1,
    /// §3.3.1.5), printable ASCII (§3.3.1.3's key and value characters, and the commas and
    /// spaces between members). Anything else is dropped rather than forwarded.
    public static func traceState(_ value: String) -> String? {
        var members = 1
        for b in value.utf8 {
            guard b >= 0x20, b <= 0x7E else { return nil }
            if b == 0x2C { members += 1 }
        }
        guard !value.isEmpty, value.utf8.count <= 512, members <= 32 else { return nil }
        return value
    }

    /// `count` lowercase hex digits (HEXDIGLC, §3.2.2) from `at`, or nil.
    private static func hex(_ v: [UInt8], _ at: Int, _ count: Int) -> UInt64? {
        var n: UInt64 = 0
        for b in v[at..<at + count] {
            switch b {
            case 0x30...0x39: n = n << 4 | UInt64(b - 0x30)
            case 0x61...0x66: n = n << 4 | UInt64(b - 0x57)
            default: return nil
            }
        }
        return n
    }
}
