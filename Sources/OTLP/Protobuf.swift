/// The protobuf wire format's length-delimited field (protobuf encoding guide, "Message
/// Structure" and "Length-Delimited Records"): the key (field number << 3 | wire type 2) as
/// a varint, the length as a varint, the bytes. For TraceExport's wrapping messages, whose
/// every field is an embedded message (serialized by swift-protobuf, or a span by SpanWire).
enum Protobuf {
    static func appendField(_ number: Int, _ bytes: [UInt8], to out: inout [UInt8]) {
        appendVarint(UInt64(number << 3 | 2), to: &out)
        appendVarint(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}
