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
        var scopeSpans = Opentelemetry_Proto_Trace_V1_ScopeSpans()
        scopeSpans.scope.name = scope.name
        scopeSpans.scope.version = scope.version
        scopeSpans.spans = spans.map(message)
        var resourceSpans = Opentelemetry_Proto_Trace_V1_ResourceSpans()
        resourceSpans.resource.attributes = resource.map(keyValue)
        resourceSpans.scopeSpans = [scopeSpans]
        var request = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest()
        request.resourceSpans = [resourceSpans]
        do {
            return try request.serializedBytes()
        } catch {
            // Only a message with a missing required field fails to serialize, and proto3
            // has none.
            preconditionFailure("ExportTraceServiceRequest did not serialize: \(error)")
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
    static func bytes(_ words: UInt64...) -> Data {
        var out = Data(capacity: 8 * words.count)
        for w in words {
            for i in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: w >> UInt64(i))) }
        }
        return out
    }
}
