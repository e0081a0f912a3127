import Foundation
import SwiftProtobuf

/// OTLP/HTTP's trace export (OpenTelemetry Protocol, "OTLP/HTTP"): finished spans as one
/// `ExportTraceServiceRequest` in binary protobuf, the body of a POST to `/v1/traces` with
/// `Content-Type: application/x-protobuf`. One resource (the process) and one
/// instrumentation scope (tokengate) per request.
public enum TraceExport {
    public static let contentType = "application/x-protobuf"

    /// The request body for `spans`. `resource`: the process's attributes (`service.name`
    /// first); `scope`: the instrumentation's name and version.
    public static func body(
        _ spans: [SpanRecord], resource: [SpanRecord.Attribute], scope: (name: String, version: String)
    ) -> [UInt8] {
        // swift-protobuf sizes a nested message again at every level it is nested in, and a
        // span's attribute values sit six levels deep in the request: most of the export's
        // time went to sizing them over and over. Each span (three levels: Span, KeyValue,
        // AnyValue) and the resource and scope are serialized by swift-protobuf; the three
        // wrapping messages, which hold nothing but those, are framed here (field number,
        // wire type 2, length), as they would be.
        var resourceMessage = Opentelemetry_Proto_Resource_V1_Resource()
        resourceMessage.attributes = resource.map(keyValue)
        var scopeMessage = Opentelemetry_Proto_Common_V1_InstrumentationScope()
        scopeMessage.name = scope.name
        scopeMessage.version = scope.version
        var scopeSpans: [UInt8] = []
        scopeSpans.reserveCapacity(spans.count * 400)
        Protobuf.appendField(1, serialized(scopeMessage), to: &scopeSpans)  // ScopeSpans.scope
        for span in spans { Protobuf.appendField(2, serialized(message(span)), to: &scopeSpans) }  // .spans
        var resourceSpans: [UInt8] = []
        resourceSpans.reserveCapacity(scopeSpans.count + 256)
        Protobuf.appendField(1, serialized(resourceMessage), to: &resourceSpans)  // ResourceSpans.resource
        Protobuf.appendField(2, scopeSpans, to: &resourceSpans)  // ResourceSpans.scope_spans
        var request: [UInt8] = []
        request.reserveCapacity(resourceSpans.count + 8)
        // ExportTraceServiceRequest.resource_spans
        Protobuf.appendField(1, resourceSpans, to: &request)
        return request
    }

    static func serialized(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            // Only a message with a missing required field fails to serialize, and proto3
            // has none.
            preconditionFailure("\(type(of: message)) did not serialize: \(error)")
        }
    }

    /// How many spans a collector's answer says it rejected (`partial_success`, OTLP §
    /// "Partial Success"); 0 for an answer that is not an ExportTraceServiceResponse.
    public static func rejectedSpans(_ response: [UInt8]) -> Int {
        let r = try? Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceResponse(serializedBytes: response)
        return Int(clamping: r?.partialSuccess.rejectedSpans ?? 0)
    }

    static func message(_ s: SpanRecord) -> Opentelemetry_Proto_Trace_V1_Span {
        var m = Opentelemetry_Proto_Trace_V1_Span()
        m.traceID = bytes(s.traceID.high, s.traceID.low)
        m.spanID = bytes(s.spanID)
        if s.parentSpanID != 0 { m.parentSpanID = bytes(s.parentSpanID) }
        if let state = s.traceState { m.traceState = state }
        // W3C trace flags (sampled) and whether the parent is remote (SpanFlags).
        m.flags = 0x01 | 0x100 | (s.parentIsRemote ? 0x200 : 0)
        m.name = s.name
        m.kind = s.kind == .server ? .server : .client
        m.startTimeUnixNano = s.startNanos
        m.endTimeUnixNano = max(s.endNanos, s.startNanos)
        m.attributes = s.attributes.map(keyValue)
        if let message = s.error {
            m.status.code = .error
            m.status.message = message
        }
        return m
    }

    static func keyValue(_ a: SpanRecord.Attribute) -> Opentelemetry_Proto_Common_V1_KeyValue {
        var kv = Opentelemetry_Proto_Common_V1_KeyValue()
        kv.key = a.key
        switch a.value {
        case .string(let s): kv.value.stringValue = s
        case .int(let n): kv.value.intValue = n
        case .bool(let b): kv.value.boolValue = b
        }
        return kv
    }

    /// Big-endian bytes, as OTLP carries ids.
    static func bytes(_ high: UInt64, _ low: UInt64? = nil) -> Data {
        var out = [UInt8](repeating: 0, count: low == nil ? 8 : 16)
        for i in 0..<8 { out[i] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * i)) }
        if let low { for i in 0..<8 { out[8 + i] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * i)) } }
        return Data(out)
    }
}
