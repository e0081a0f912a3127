import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import OTLP

/// The OTLP `Span` a `SpanRecord` stands for, built with swift-protobuf's generated
/// messages: the reference `SpanWire`'s bytes are held to.
enum SwiftProtobufSpan {
    static func message(_ s: SpanRecord) -> Opentelemetry_Proto_Trace_V1_Span {
        var m = Opentelemetry_Proto_Trace_V1_Span()
        m.traceID = bigEndian(s.traceID.high) + bigEndian(s.traceID.low)
        m.spanID = bigEndian(s.spanID)
        if s.parentSpanID != 0 { m.parentSpanID = bigEndian(s.parentSpanID) }
        if let state = s.traceState { m.traceState = state }
        // W3C trace flags (sampled) and whether the parent is remote (SpanFlags).
        m.flags = 0x01 | 0x100 | (s.parentIsRemote ? 0x200 : 0)
        m.name = s.name
        m.kind = s.kind == .server ? .server : .client
        m.startTimeUnixNano = s.startNanos
        m.endTimeUnixNano = max(s.endNanos, s.startNanos)
        m.attributes = s.attributes.map(TraceExport.keyValue)
        if let message = s.error {
            m.status.code = .error
            m.status.message = message
        }
        return m
    }

    static func bigEndian(_ n: UInt64) -> Data { withUnsafeBytes(of: n.bigEndian) { Data($0) } }
}

@Suite("OTLP spans written directly: swift-protobuf's bytes")
struct SpanWireTests {
    static func text(_ g: inout SeededRandom) -> String {
        let pieces = [
            "", "a", "GET", "/orders/{id}", "é", "日本", "\u{0}", "\"q\"", "🙂", String(repeating: "x", count: 130)
        ]
        let n = Int.random(in: 0...3, using: &g)
        return (0..<n).map { _ in pieces.randomElement(using: &g)! }.joined()
    }

    static func value(_ g: inout SeededRandom) -> SpanRecord.Value {
        switch Int.random(in: 0..<3, using: &g) {
        case 0: .string(text(&g))
        case 1: .bool(Bool.random(using: &g))
        default:
            .int(
                [0, 1, -1, 127, 128, 503, Int64.min, Int64.max, Int64.random(in: .min ... .max, using: &g)]
                    .randomElement(using: &g)!)
        }
    }

    static func span(_ g: inout SeededRandom) -> SpanRecord {
        let times: [UInt64] = [0, 1, 1_700_000_000_123_456_789, UInt64.max, UInt64.random(in: 0 ... .max, using: &g)]
        return SpanRecord(
            traceID: TraceID(high: g.next(), low: [0, 1, g.next()].randomElement(using: &g)!),
            spanID: [1, UInt64.max, g.next()].randomElement(using: &g)!,
            parentSpanID: [0, g.next()].randomElement(using: &g)!, parentIsRemote: Bool.random(using: &g),
            traceState: [nil, "", "k=v", text(&g)].randomElement(using: &g)!, name: text(&g),
            kind: Bool.random(using: &g) ? .server : .client, startNanos: times.randomElement(using: &g)!,
            endNanos: times.randomElement(using: &g)!,
            attributes: (0..<Int.random(in: 0...12, using: &g)).map { _ in .init(text(&g), value(&g)) },
            error: [nil, "", "timeout", text(&g)].randomElement(using: &g)!)
    }

    @Test(arguments: [1, 2, 3, 4]) func everySpanIsTheBytesSwiftProtobufWrites(seed: UInt64) throws {
        var g = SeededRandom(state: seed)
        for _ in 0..<500 {
            let s = Self.span(&g)
            var wire: [UInt8] = []
            SpanWire.append(s, size: SpanWire.size(s), to: &wire)
            #expect(wire.count == SpanWire.size(s))
            let reference: [UInt8] = try SwiftProtobufSpan.message(s).serializedBytes()
            #expect(wire == reference, "seed \(seed): \(s)")
            #expect(try Opentelemetry_Proto_Trace_V1_Span(serializedBytes: wire) == SwiftProtobufSpan.message(s))
        }
    }

    @Test func theSpansOfARequestReadBackAsSent() throws {
        let s = SpanRecord(
            traceID: TraceID(high: 1, low: 2), spanID: 3, parentSpanID: 4, parentIsRemote: true, traceState: "a=b",
            name: "GET orders", kind: .server, startNanos: 10, endNanos: 5,
            attributes: [.init("url.path", .string("/o")), .init("http.response.status_code", .int(502))],
            error: "")
        var wire: [UInt8] = []
        SpanWire.append(s, size: SpanWire.size(s), to: &wire)
        let m = try Opentelemetry_Proto_Trace_V1_Span(serializedBytes: wire)
        #expect(m.traceID == Data([0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]))
        #expect(m.parentSpanID == Data([0, 0, 0, 0, 0, 0, 0, 4]))
        #expect(m.kind == .server && m.flags == 0x301 && m.status.code == .error && m.status.message.isEmpty)
        // An end before the start (a clock step) is sent as the start.
        #expect(m.startTimeUnixNano == 10 && m.endTimeUnixNano == 10)
        #expect(m.attributes.map(\.value.intValue) == [0, 502])
    }

    @Test func varintSizesMatchTheBytesWritten() {
        for v: UInt64 in [0, 1, 127, 128, 16_383, 16_384, 1 << 35, 1 << 63, .max] {
            var out: [UInt8] = []
            Protobuf.appendVarint(v, to: &out)
            #expect(Protobuf.varintSize(v) == out.count, "\(v)")
        }
    }
}
