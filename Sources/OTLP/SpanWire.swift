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

    /// The size of the span's message body: what its frame's length says.
    static func size(_ s: SpanRecord) -> Int {
        var n = 2 + 16 + 2 + 8  // trace_id, span_id
        if let state = s.traceState, !state.isEmpty { n += stringFieldSize(state.utf8.count) }
        if s.parentSpanID != 0 { n += 2 + 8 }
        if !s.name.isEmpty { n += stringFieldSize(s.name.utf8.count) }
        n += 2  // kind
        if s.startNanos != 0 { n += 9 }
        if max(s.endNanos, s.startNanos) != 0 { n += 9 }
        for i in s.attributes.indices {
            let kv = keyValueSize(s.attributes[i])
            n += 1 + Protobuf.varintSize(UInt64(kv)) + kv
        }
        if let message = s.error {
            let status = statusSize(message)
            n += 1 + Protobuf.varintSize(UInt64(status)) + status
        }
        return n + 2 + 4  // flags: a two-byte key, fixed32
    }

    /// Appends the span's message body, `size(s)` bytes (not framed: the caller writes its
    /// field key and that length first). One capacity check for the span, not one a byte.
    static func append(_ s: SpanRecord, size: Int, to out: inout [UInt8]) {
        out.append(addingCapacity: size) { o in write(s, to: &o) }
    }

    private static func write(_ s: SpanRecord, to o: inout OutputSpan<UInt8>) {
        ids(traceID, s.traceID.high, s.traceID.low, to: &o)
        ids(spanID, s.spanID, nil, to: &o)
        if let state = s.traceState, !state.isEmpty { string(traceState, state, to: &o) }
        if s.parentSpanID != 0 { ids(parentSpanID, s.parentSpanID, nil, to: &o) }
        if !s.name.isEmpty { string(name, s.name, to: &o) }
        Protobuf.varint(kind, to: &o)
        o.append(s.kind == .server ? kindServer : kindClient)
        // A clock step can put the end before the start; it is never sent as such.
        fixed64(startTime, s.startNanos, to: &o)
        fixed64(endTime, max(s.endNanos, s.startNanos), to: &o)
        // By index: each attribute is read in place, not copied (a retain and a release of
        // its strings) as a for-in loop's element would be.
        for i in s.attributes.indices {
            Protobuf.varint(attribute, to: &o)
            Protobuf.varint(UInt64(keyValueSize(s.attributes[i])), to: &o)
            keyValue(s.attributes[i], to: &o)
        }
        if let message = s.error {
            Protobuf.varint(status, to: &o)
            Protobuf.varint(UInt64(statusSize(message)), to: &o)
            if !message.isEmpty { string(statusMessage, message, to: &o) }
            Protobuf.varint(statusCode, to: &o)
            o.append(statusError)
        }
        Protobuf.varint(flags, to: &o)
        var f = sampled | hasIsRemote | (s.parentIsRemote ? isRemote : 0)
        for _ in 0..<4 {
            o.append(UInt8(truncatingIfNeeded: f))
            f >>= 8
        }
    }

    /// A `KeyValue` whose value is always set (an `AnyValue` with one of its oneof's fields).
    private static func keyValue(_ a: SpanRecord.Attribute, to o: inout OutputSpan<UInt8>) {
        if !a.key.isEmpty { string(keyValueKey, a.key, to: &o) }
        Protobuf.varint(keyValueValue, to: &o)
        Protobuf.varint(UInt64(anyValueSize(a.value)), to: &o)
        switch a.value {
        case .string(let s): string(stringValue, s, to: &o)
        case .bool(let b):
            Protobuf.varint(boolValue, to: &o)
            o.append(b ? 1 : 0)
        case .int(let n):
            Protobuf.varint(intValue, to: &o)
            // int64: a negative value is its two's complement, ten bytes.
            Protobuf.varint(UInt64(bitPattern: n), to: &o)
        }
    }

    private static func keyValueSize(_ a: SpanRecord.Attribute) -> Int {
        let k = a.key.utf8.count
        let v = anyValueSize(a.value)
        return (k == 0 ? 0 : stringFieldSize(k)) + 1 + Protobuf.varintSize(UInt64(v)) + v
    }

    private static func anyValueSize(_ v: SpanRecord.Value) -> Int {
        switch v {
        case .string(let s): stringFieldSize(s.utf8.count)
        case .bool: 2
        case .int(let n): 1 + Protobuf.varintSize(UInt64(bitPattern: n))
        }
    }

    /// `Status`: the message unless empty, and the code (error).
    private static func statusSize(_ message: String) -> Int {
        let text = message.utf8.count
        return (text == 0 ? 0 : stringFieldSize(text)) + 2
    }

    /// A length-delimited field with a one-byte key and `length` bytes.
    private static func stringFieldSize(_ length: Int) -> Int { 1 + Protobuf.varintSize(UInt64(length)) + length }

    private static func string(_ key: UInt64, _ s: String, to o: inout OutputSpan<UInt8>) {
        Protobuf.varint(key, to: &o)
        let bytes = s.utf8.span
        Protobuf.varint(UInt64(bytes.count), to: &o)
        for i in bytes.indices { o.append(bytes[i]) }
    }

    /// Ids are bytes fields, big-endian (as OTLP carries them): 8 bytes, or 16 with `low`.
    private static func ids(_ key: UInt64, _ high: UInt64, _ low: UInt64?, to o: inout OutputSpan<UInt8>) {
        Protobuf.varint(key, to: &o)
        o.append(low == nil ? 8 : 16)
        bigEndian(high, to: &o)
        if let low { bigEndian(low, to: &o) }
    }

    private static func bigEndian(_ n: UInt64, to o: inout OutputSpan<UInt8>) {
        for shift in stride(from: 56, through: 0, by: -8) { o.append(UInt8(truncatingIfNeeded: n >> UInt64(shift))) }
    }

    /// fixed64: eight bytes, little-endian; 0, proto3's default, is left out.
    private static func fixed64(_ key: UInt64, _ n: UInt64, to o: inout OutputSpan<UInt8>) {
        guard n != 0 else { return }
        Protobuf.varint(key, to: &o)
        for shift in stride(from: 0, through: 56, by: 8) { o.append(UInt8(truncatingIfNeeded: n >> UInt64(shift))) }
    }
}
