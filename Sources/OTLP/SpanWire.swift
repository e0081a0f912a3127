/// A `Span` (opentelemetry/proto/trace/v1/trace.proto) in protobuf's binary wire format,
/// written straight from a `SpanRecord`: the bytes swift-protobuf writes for the same span
/// (fields in number order, proto3 defaults left out, a oneof's value always written), which
/// `TraceExportTests` checks against swift-protobuf's own encoding over many spans.
///
/// Why not swift-protobuf here: the export writes every span of every sampled request, and
/// through swift-protobuf's messages a span cost 1.9 µs of the exporter's thread (a
/// heap-stored `Span`, a `KeyValue` and an `AnyValue` per attribute, unspecialized generic
/// visitors that size each nested message again at every level): at `sample_ratio: 1` that
/// thread alone took 15 % of the gateway's CPU while dropping half the spans. swift-protobuf
/// still writes the resource and the scope, reads the collector's answer, and is the
/// reference the tests hold these bytes to.
enum SpanWire {
    // Field numbers of trace.proto's `Span`, `Status` and common.proto's `KeyValue`,
    // `AnyValue`, with their wire types (protobuf encoding guide, "Message Structure").
    private static let traceID = key(1, .lengthDelimited)
    private static let spanID = key(2, .lengthDelimited)
    private static let traceState = key(3, .lengthDelimited)
    private static let parentSpanID = key(4, .lengthDelimited)
    private static let name = key(5, .lengthDelimited)
    private static let kind = key(6, .varint)
    private static let startTime = key(7, .fixed64)
    private static let endTime = key(8, .fixed64)
    private static let attribute = key(9, .lengthDelimited)
    private static let status = key(15, .lengthDelimited)
    private static let flags = key(16, .fixed32)
    private static let statusMessage = key(2, .lengthDelimited)
    private static let statusCode = key(3, .varint)
    private static let keyValueKey = key(1, .lengthDelimited)
    private static let keyValueValue = key(2, .lengthDelimited)
    private static let stringValue = key(1, .lengthDelimited)
    private static let boolValue = key(2, .varint)
    private static let intValue = key(3, .varint)

    /// `Span.SpanKind` and `Status.StatusCode` values.
    private static let kindServer: UInt8 = 2
    private static let kindClient: UInt8 = 3
    private static let statusError: UInt8 = 2
    /// `SpanFlags`: the W3C trace flags (sampled), and whether the parent's remoteness is
    /// known (0x100) and remote (0x200).
    private static let sampled: UInt32 = 0x01
    private static let hasIsRemote: UInt32 = 0x100
    private static let isRemote: UInt32 = 0x200

    private enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    private static func key(_ number: UInt64, _ type: WireType) -> UInt64 { number << 3 | UInt64(type.rawValue) }

    /// Appends the span's message body (not framed: the caller writes its field key and
    /// length).
    static func append(_ s: SpanRecord, to out: inout [UInt8]) {
        ids(traceID, s.traceID.high, s.traceID.low, to: &out)
        ids(spanID, s.spanID, nil, to: &out)
        if let state = s.traceState, !state.isEmpty { string(traceState, state, to: &out) }
        if s.parentSpanID != 0 { ids(parentSpanID, s.parentSpanID, nil, to: &out) }
        if !s.name.isEmpty { string(name, s.name, to: &out) }
        Protobuf.appendVarint(kind, to: &out)
        out.append(s.kind == .server ? kindServer : kindClient)
        // A clock step can put the end before the start; it is never sent as such.
        fixed64(startTime, s.startNanos, to: &out)
        fixed64(endTime, max(s.endNanos, s.startNanos), to: &out)
        for a in s.attributes {
            Protobuf.appendVarint(attribute, to: &out)
            Protobuf.appendVarint(UInt64(keyValueSize(a)), to: &out)
            keyValue(a, to: &out)
        }
        if let message = s.error {
            let text = message.utf8.count
            Protobuf.appendVarint(status, to: &out)
            Protobuf.appendVarint(UInt64((text == 0 ? 0 : stringFieldSize(text)) + 2), to: &out)
            if text != 0 { string(statusMessage, message, to: &out) }
            Protobuf.appendVarint(statusCode, to: &out)
            out.append(statusError)
        }
        Protobuf.appendVarint(flags, to: &out)
        var f = sampled | hasIsRemote | (s.parentIsRemote ? isRemote : 0)
        for _ in 0..<4 {
            out.append(UInt8(truncatingIfNeeded: f))
            f >>= 8
        }
    }

    /// A `KeyValue` whose value is always set (an `AnyValue` with one of its oneof's fields).
    static func keyValue(_ a: SpanRecord.Attribute, to out: inout [UInt8]) {
        if !a.key.isEmpty { string(keyValueKey, a.key, to: &out) }
        Protobuf.appendVarint(keyValueValue, to: &out)
        Protobuf.appendVarint(UInt64(anyValueSize(a.value)), to: &out)
        switch a.value {
        case .string(let s): string(stringValue, s, to: &out)
        case .bool(let b):
            Protobuf.appendVarint(boolValue, to: &out)
            out.append(b ? 1 : 0)
        case .int(let n):
            Protobuf.appendVarint(intValue, to: &out)
            // int64: a negative value is its two's complement, ten bytes.
            Protobuf.appendVarint(UInt64(bitPattern: n), to: &out)
        }
    }

    private static func keyValueSize(_ a: SpanRecord.Attribute) -> Int {
        let k = a.key.utf8.count
        let v = anyValueSize(a.value)
        return (k == 0 ? 0 : stringFieldSize(k)) + 1 + varintSize(UInt64(v)) + v
    }

    private static func anyValueSize(_ v: SpanRecord.Value) -> Int {
        switch v {
        case .string(let s): stringFieldSize(s.utf8.count)
        case .bool: 2
        case .int(let n): 1 + varintSize(UInt64(bitPattern: n))
        }
    }

    /// A length-delimited field with a one-byte key and `length` bytes.
    private static func stringFieldSize(_ length: Int) -> Int { 1 + varintSize(UInt64(length)) + length }

    static func varintSize(_ value: UInt64) -> Int {
        // 7 bits a byte: 1 for 0...127, 10 for a value with the top bit set.
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    private static func string(_ key: UInt64, _ s: String, to out: inout [UInt8]) {
        Protobuf.appendVarint(key, to: &out)
        Protobuf.appendVarint(UInt64(s.utf8.count), to: &out)
        out.append(contentsOf: s.utf8)
    }

    /// Ids are bytes fields, big-endian (as OTLP carries them): 8 bytes, or 16 with `low`.
    private static func ids(_ key: UInt64, _ high: UInt64, _ low: UInt64?, to out: inout [UInt8]) {
        Protobuf.appendVarint(key, to: &out)
        out.append(low == nil ? 8 : 16)
        bigEndian(high, to: &out)
        if let low { bigEndian(low, to: &out) }
    }

    private static func bigEndian(_ n: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: n >> UInt64(shift))) }
    }

    /// fixed64: eight bytes, little-endian; 0, proto3's default, is left out.
    private static func fixed64(_ key: UInt64, _ n: UInt64, to out: inout [UInt8]) {
        guard n != 0 else { return }
        Protobuf.appendVarint(key, to: &out)
        for shift in stride(from: 0, through: 56, by: 8) { out.append(UInt8(truncatingIfNeeded: n >> UInt64(shift))) }
    }
}
