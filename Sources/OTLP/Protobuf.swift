/// The protobuf wire format's varints and length-delimited fields (protobuf encoding guide,
/// "Base 128 Varints", "Message Structure" and "Length-Delimited Records"): a field is the
/// key (field number << 3 | wire type 2) as a varint, the length as a varint, the bytes. For
/// TraceExport's wrapping messages, whose every field is an embedded message (serialized by
/// swift-protobuf, or a span by SpanWire), and for SpanWire's own fields.
enum Protobuf {
    static func appendField(_ number: Int, _ bytes: [UInt8], to out: inout [UInt8]) {
        appendFieldHeader(number, length: bytes.count, to: &out)
        out.append(contentsOf: bytes)
    }

    /// A length-delimited field's key and length; its `length` bytes follow.
    static func appendFieldHeader(_ number: Int, length: Int, to out: inout [UInt8]) {
        appendVarint(UInt64(number << 3 | 2), to: &out)
        appendVarint(UInt64(length), to: &out)
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        out.append(addingCapacity: varintSize(value)) { varint(value, to: &$0) }
    }

    /// A varint into reserved capacity: 7 bits a byte, low bits first, `varintSize` bytes.
    static func varint(_ value: UInt64, to o: inout OutputSpan<UInt8>) {
        var v = value
        while v >= 0x80 {
            o.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        o.append(UInt8(v))
    }

    static func varintSize(_ value: UInt64) -> Int {
        // 7 bits a byte: 1 for 0...127, 10 for a value with the top bit set.
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }
}
