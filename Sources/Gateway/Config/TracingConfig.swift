/// `tracing`: where the gateway's spans go (OTLP/HTTP, binary protobuf) and which requests
/// it traces. Fixed at start, like `access_log`.
struct TracingConfig: Sendable, Equatable {
    /// What a `traceparent` from a client that is not one of `trusted_proxies` does.
    enum Incoming: String, Sendable, Equatable, CaseIterable {
        /// The gateway's span joins the client's trace, and follows its sampled flag.
        case join
        /// The client's trace context is dropped: the gateway starts a trace of its own
        /// (a client cannot choose what is sampled, nor fill the collector with its traces).
        case restart
    }

    /// The URL spans are POSTed to, `/v1/traces` included.
    var endpoint: String
    /// `service.name` of the resource.
    var serviceName = "tokengate"
    /// The share of new traces sampled (ParentBased(TraceIdRatioBased)): a joined trace
    /// follows its parent's sampled flag.
    var sampleRatio = 1.0
    /// Sent with every export (a collector's API key): `Name: value` lines.
    var headers: [String] = []
    var incoming = Incoming.restart
    /// The whole export call (OTLP's `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default).
    var timeout = 10.0
    /// CA bundle for an `https` collector; nil: the system's.
    var caFile: String? = nil
    /// `OTEL_RESOURCE_ATTRIBUTES`, after `service.name`.
    var resourceAttributes: [(String, String)] = []

    static func == (a: TracingConfig, b: TracingConfig) -> Bool {
        a.endpoint == b.endpoint && a.serviceName == b.serviceName && a.sampleRatio == b.sampleRatio
            && a.headers == b.headers && a.incoming == b.incoming && a.timeout == b.timeout && a.caFile == b.caFile
            && a.resourceAttributes.elementsEqual(b.resourceAttributes) { $0 == $1 }
    }
}
