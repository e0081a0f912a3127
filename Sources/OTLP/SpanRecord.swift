/// A finished span, as the gateway hands it to the exporter: plain values, so that a worker
/// builds it without the OTLP messages, and the exporter's thread encodes it.
public struct SpanRecord: Sendable {
    /// OTLP's `Span.SpanKind`: the gateway's own span for a request, or its call out.
    public enum Kind: Sendable {
        case server
        case client
    }

    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    public struct Attribute: Sendable {
        public var key: String
        public var value: Value
        public init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    public var traceID: TraceID
    public var spanID: UInt64
    /// 0: a root span.
    public var parentSpanID: UInt64
    /// The parent came from another process (a `traceparent` the gateway joined).
    public var parentIsRemote: Bool
    public var traceState: String?
    public var name: String
    public var kind: Kind
    /// Unix time, nanoseconds.
    public var startNanos: UInt64
    public var endNanos: UInt64
    public var attributes: [Attribute]
    /// OTLP's `Status.STATUS_CODE_ERROR`, with a message (never the dependency's own words).
    public var error: String?

    public init(
        traceID: TraceID, spanID: UInt64, parentSpanID: UInt64, parentIsRemote: Bool = false,
        traceState: String? = nil, name: String, kind: Kind, startNanos: UInt64, endNanos: UInt64,
        attributes: [Attribute] = [], error: String? = nil
    ) {
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.parentIsRemote = parentIsRemote
        self.traceState = traceState
        self.name = name
        self.kind = kind
        self.startNanos = startNanos
        self.endNanos = endNanos
        self.attributes = attributes
        self.error = error
    }
}
