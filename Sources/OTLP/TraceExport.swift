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
        body([spans], resource: resource, scope: scope)
    }

    /// The request body for the spans of `batches`, in order.
    public static func body(
        _ batches: [[SpanRecord]], resource: [SpanRecord.Attribute], scope: (name: String, version: String)
    ) -> [UInt8] {
        // swift-protobuf sizes a nested message again at every level it is nested in, and a
        // span's attribute values sit six levels deep in the request. The resource and the
        // scope are serialized by swift-protobuf; each span is written by `SpanWire` (the same
        // bytes, at a tenth of the cost); the three wrapping messages, which hold nothing but
        // those, are framed here (field number, wire type 2, length), as they would be.
        var resourceMessage = Opentelemetry_Proto_Resource_V1_Resource()
        resourceMessage.attributes = resource.map(keyValue)
        var scopeMessage = Opentelemetry_Proto_Common_V1_InstrumentationScope()
        scopeMessage.name = scope.name
        scopeMessage.version = scope.version
        var scopeSpans: [UInt8] = []
        scopeSpans.reserveCapacity(batches.reduce(0) { $0 + $1.count } * 400)
        Protobuf.appendField(1, serialized(scopeMessage), to: &scopeSpans)  // ScopeSpans.scope
        for batch in batches {
            for i in batch.indices {
                let size = SpanWire.size(batch[i])
                Protobuf.appendFieldHeader(2, length: size, to: &scopeSpans)  // ScopeSpans.spans
                SpanWire.append(batch[i], size: size, to: &scopeSpans)
            }
        }
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
}
