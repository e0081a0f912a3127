import Foundation
import Testing

@testable import OTLP

@Suite("W3C traceparent: read strictly, written in version 00")
struct TraceContextTests {
    // W3C Trace Context Level 1 §3.2's example.
    let example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func readsTheSpecExample() throws {
        let c = try #require(TraceContext.parse(example))
        #expect(c.traceID == TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736))
        #expect(c.spanID == 0x00f0_67aa_0ba9_02b7)
        #expect(c.sampled)
        #expect(c.traceparent == example)
        #expect(TraceContext.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
    }

    @Test func aLaterVersionIsReadAsVersion00() {
        #expect(TraceContext.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") != nil)
        #expect(TraceContext.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra") != nil)
        // Something after the flags, not behind a dash: not a traceparent.
        #expect(TraceContext.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x") == nil)
    }

    @Test(arguments: [
        "",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff is invalid
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase hex
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00 has nothing after
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // a short trace id
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
    ])
    func refused(_ value: String) {
        #expect(TraceContext.parse(value) == nil)
    }

    @Test func traceStateIsPassedOnOnlyWhenItIsPrintableAndBounded() {
        #expect(
            TraceContext.traceState("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
                == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        #expect(TraceContext.traceState("a=b\r\nx-injected: 1") == nil)
        #expect(TraceContext.traceState("") == nil)
        #expect(TraceContext.traceState(String(repeating: "a", count: 513)) == nil)
        #expect(TraceContext.traceState((0..<33).map { "k\($0)=v" }.joined(separator: ",")) == nil)
        #expect(TraceContext.traceState((0..<32).map { "k\($0)=v" }.joined(separator: ",")) != nil)
    }
}

@Suite("OTLP/HTTP: spans in an ExportTraceServiceRequest")
struct TraceExportTests {
    @Test func spansReadBackWithTheirIdsTimesAndAttributes() throws {
        let trace = TraceID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
        let server = SpanRecord(
            traceID: trace, spanID: 0xAA, parentSpanID: 0xBB, parentIsRemote: true, traceState: "k=v",
            name: "GET orders", kind: .server, startNanos: 1_000, endNanos: 5_000,
            attributes: [.init("http.request.method", .string("GET")), .init("http.response.status_code", .int(503))],
            error: "")
        let client = SpanRecord(
            traceID: trace, spanID: 0xCC, parentSpanID: 0xAA, name: "GET", kind: .client, startNanos: 2_000,
            endNanos: 1_500)
        let body = TraceExport.body(
            [server, client], resource: [.init("service.name", .string("gw"))], scope: ("tokengate", "1.2.3"))
        let request = try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest(serializedBytes: body)
        let rs = try #require(request.resourceSpans.first)
        #expect(rs.resource.attributes.map(\.key) == ["service.name"])
        #expect(rs.resource.attributes.first?.value.stringValue == "gw")
        let ss = try #require(rs.scopeSpans.first)
        #expect(ss.scope.name == "tokengate" && ss.scope.version == "1.2.3")
        #expect(ss.spans.count == 2)
        let s = ss.spans[0]
        #expect(s.traceID == Data([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]))
        #expect(s.spanID == Data([0, 0, 0, 0, 0, 0, 0, 0xAA]))
        #expect(s.parentSpanID == Data([0, 0, 0, 0, 0, 0, 0, 0xBB]))
        #expect(s.traceState == "k=v")
        #expect(s.kind == .server)
        #expect(s.flags == 0x301)
        #expect(s.startTimeUnixNano == 1_000 && s.endTimeUnixNano == 5_000)
        #expect(s.status.code == .error)
        #expect(s.attributes.map(\.key) == ["http.request.method", "http.response.status_code"])
        #expect(s.attributes[1].value.intValue == 503)
        let c = ss.spans[1]
        #expect(c.kind == .client && c.flags == 0x101 && c.status.code == .unset)
        // An end before the start (a clock step) is never sent as such.
        #expect(c.endTimeUnixNano == c.startTimeUnixNano)
    }

    @Test func partialSuccessNamesTheRejectedSpans() throws {
        var response = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceResponse()
        response.partialSuccess.rejectedSpans = 7
        #expect(TraceExport.rejectedSpans(try response.serializedBytes()) == 7)
        #expect(TraceExport.rejectedSpans([]) == 0)
        #expect(TraceExport.rejectedSpans(Array("not protobuf".utf8)) == 0)
    }

    @Test func theFramedRequestIsTheBytesSwiftProtobufWritesForTheWholeMessage() throws {
        let spans = (0..<300).map { i in
            SpanRecord(
                traceID: TraceID(high: UInt64(i) + 1, low: 7), spanID: UInt64(i) + 100, parentSpanID: UInt64(i),
                name: "GET r\(i)", kind: i % 2 == 0 ? .server : .client, startNanos: 10, endNanos: 20,
                attributes: [.init("url.path", .string(String(repeating: "/x", count: i))), .init("n", .int(Int64(i)))])
        }
        let resource: [SpanRecord.Attribute] = [.init("service.name", .string("gw")), .init("b", .bool(true))]
        var whole = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest()
        var rs = Opentelemetry_Proto_Trace_V1_ResourceSpans()
        rs.resource.attributes = resource.map(TraceExport.keyValue)
        var ss = Opentelemetry_Proto_Trace_V1_ScopeSpans()
        ss.scope.name = "tokengate"
        ss.scope.version = "9"
        ss.spans = spans.map(SwiftProtobufSpan.message)
        rs.scopeSpans = [ss]
        whole.resourceSpans = [rs]
        let framed = TraceExport.body(spans, resource: resource, scope: ("tokengate", "9"))
        #expect(framed == (try whole.serializedBytes() as [UInt8]))
        #expect(try Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest(serializedBytes: framed) == whole)
    }

    @Test func varintsAsTheWireFormatWritesThem() {
        for (value, bytes) in [(0, [0x00]), (1, [0x01]), (127, [0x7F]), (128, [0x80, 0x01]), (300, [0xAC, 0x02])] {
            var out: [UInt8] = []
            Protobuf.appendVarint(UInt64(value), to: &out)
            #expect(out == bytes.map(UInt8.init))
        }
    }
}
