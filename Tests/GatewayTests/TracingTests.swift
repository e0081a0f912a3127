import Foundation
import OTLP
import Reactor
import Testing

@testable import Gateway

@Suite("Tracing: the tracing section, the OTEL_* variables and the sampler")
struct TracingTests {
    let routes = """
        upstreams: { app: { url: "http://127.0.0.1:3000" } }
        routes: [{ match: { path_prefix: / }, upstream: app, auth: none }]
        """

    func parse(_ tracing: String, env: [String: String] = [:]) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: tracing + "\n" + routes, environment: env, baseDirectory: "/etc/tg", cores: 2)
    }

    func config(_ tracing: String, env: [String: String] = [:]) throws -> TracingConfig? {
        try parse(tracing, env: env).get().tracing
    }

    func problems(_ tracing: String, env: [String: String] = [:]) -> [String] {
        if case .failure(let e) = parse(tracing, env: env) { return e.problems.map(\.description) }
        return []
    }

    @Test func offWithoutTheSectionOrAnEndpointVariable() throws {
        #expect(try config("") == nil)
    }

    @Test func theSectionWithItsDefaults() throws {
        let t = try #require(try config("tracing: { otlp_endpoint: http://collector:4318/v1/traces }"))
        #expect(t.endpoint == "http://collector:4318/v1/traces")
        #expect(t.serviceName == "tokengate" && t.sampleRatio == 1 && t.incoming == .restart)
        #expect(t.timeout == 10 && t.headers.isEmpty && t.caFile == nil)
        let all = try #require(
            try config(
                """
                tracing:
                  otlp_endpoint: https://collector:4318/v1/traces
                  service_name: gw
                  sample_ratio: 0.25
                  headers: { x-api-key: secret, authorization: Bearer abc }
                  incoming: join
                  timeout: 2s
                  ca_file: ca.pem
                """))
        #expect(all.serviceName == "gw" && all.sampleRatio == 0.25 && all.incoming == .join && all.timeout == 2)
        #expect(all.headers == ["authorization: Bearer abc", "x-api-key: secret"])
        #expect(all.caFile == "/etc/tg/ca.pem")
    }

    @Test func theVariablesTurnItOnAndTheFileWinsOverThem() throws {
        let env = [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "from-env",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b,tenant=t1", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=ignored"
        ]
        let t = try #require(try config("", env: env))
        #expect(t.endpoint == "http://collector:4318/v1/traces")
        #expect(t.serviceName == "from-env" && t.sampleRatio == 0.1 && t.timeout == 2.5)
        #expect(t.headers == ["api-key: a b", "tenant: t1"])
        #expect(t.resourceAttributes.map { "\($0.0)=\($0.1)" } == ["deployment.environment=prod"])
        var traces = env
        traces["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://other:4318/custom"
        #expect(try config("", env: traces)?.endpoint == "http://other:4318/custom")
        let file = try #require(
            try config("tracing: { service_name: file, sample_ratio: 1, otlp_endpoint: http://x/v1/traces }", env: env))
        #expect(file.serviceName == "file" && file.sampleRatio == 1 && file.endpoint == "http://x/v1/traces")
        #expect(try config("", env: env.merging(["OTEL_SDK_DISABLED": "true"]) { $1 }) == nil)
        #expect(try config("", env: env.merging(["OTEL_TRACES_EXPORTER": "none"]) { $1 }) == nil)
        #expect(
            try config("", env: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "always_off"])?
                .sampleRatio == 0)
    }

    @Test func variablesForAnotherProgramDoNotRefuseAConfigWithTracingOff() throws {
        // No `tracing:` and no endpoint variable: tracing is off, so no other variable is read.
        let others = [
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_SAMPLER": "parentbased_jaeger_remote",
            "OTEL_EXPORTER_OTLP_HEADERS": "a b=c", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"
        ]
        #expect(try config("", env: others) == nil)
    }

    @Test func aVariableTheFileReplacesIsNotRead() throws {
        let env = ["OTEL_EXPORTER_OTLP_HEADERS": "a b=c", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"]
        let t = try #require(
            try config("tracing: { otlp_endpoint: http://x/v1/traces, headers: { k: v }, timeout: 3s }", env: env))
        #expect(t.headers == ["k: v"] && t.timeout == 3)
    }

    @Test func anEmptyEndpointIsRefusedNotTakenForNone() throws {
        let env = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]
        for e in [[:], env] {
            #expect(
                problems("tracing: { otlp_endpoint: \"\" }", env: e).contains {
                    $0.contains("tracing.otlp_endpoint") && $0.contains("is not an http(s) URL")
                })
        }
    }

    @Test func whatCheckConfigRefuses() throws {
        #expect(problems("tracing: {}").contains { $0.contains("tracing.otlp_endpoint") && $0.contains("is required") })
        #expect(
            problems("tracing: { otlp_endpoint: ftp://x/v1/traces }").contains { $0.contains("is not an http(s) URL") })
        #expect(
            problems("tracing: { otlp_endpoint: http://u:p@x/v1/traces }").contains {
                $0.contains("is not an http(s) URL")
            })
        let endpoint = "otlp_endpoint: http://x/v1/traces"
        #expect(problems("tracing: { \(endpoint), sample_ratio: 1.5 }").contains { $0.contains("from 0 (none) to 1") })
        #expect(
            problems("tracing: { \(endpoint), incoming: trust }").contains { $0.contains("must be join or restart") })
        #expect(problems("tracing: { \(endpoint), timeout: 90s }").contains { $0.contains("from 100ms to 60s") })
        #expect(
            problems("tracing: { \(endpoint), headers: { \"a b\": c } }").contains {
                $0.contains("is not a header name")
            })
        #expect(problems("tracing: { \(endpoint), sampler: all }").contains { $0.contains("is not a known key") })
        let env = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]
        #expect(
            problems("", env: env.merging(["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"]) { $1 }).contains {
                $0.contains("http/protobuf only")
            })
        #expect(
            problems("", env: env.merging(["OTEL_TRACES_SAMPLER": "jaeger_remote"]) { $1 }).contains {
                $0.contains("OTEL_TRACES_SAMPLER")
            })
        #expect(
            problems(
                "", env: env.merging(["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"]) { $1 }
            ).contains { $0.contains("OTEL_TRACES_SAMPLER_ARG") })
        // Another exporter is not tokengate's: tracing stays off, and nothing is refused.
        #expect(try config("", env: env.merging(["OTEL_TRACES_EXPORTER": "zipkin"]) { $1 }) == nil)
        #expect(try config("", env: env.merging(["OTEL_TRACES_EXPORTER": "console, otlp"]) { $1 }) != nil)
        // A refused endpoint's password is not repeated in the problem.
        #expect(
            problems("tracing: { otlp_endpoint: \"http://u:hunter2@x/v1/traces\" }").allSatisfy {
                !$0.contains("hunter2")
            })
        #expect(
            problems("", env: env.merging(["OTEL_EXPORTER_OTLP_HEADERS": "a b=c"]) { $1 }).contains {
                $0.contains("OTEL_EXPORTER_OTLP_HEADERS")
            })
    }

    func tracer(ratio: Double, incoming: TracingConfig.Incoming = .restart) -> Tracer {
        var c = TracingConfig(endpoint: "http://127.0.0.1:9/v1/traces")
        c.sampleRatio = ratio
        c.incoming = incoming
        return Tracer(config: c, exporter: SpanExporter(config: c, version: "test"), loop: EventLoop())
    }

    let sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"

    @Test func aTrustedParentIsFollowedWhateverTheRatio() throws {
        let t = tracer(ratio: 0)
        let (joined, drop) = t.begin(
            traceparent: sampled, tracestate: { "a=b" }, trusted: true, peer: "p", startNanos: 1)
        let trace = try #require(joined)
        #expect(drop)
        #expect(trace.traceID == TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736))
        #expect(trace.parentSpanID == 0x00f0_67aa_0ba9_02b7 && trace.traceState == "a=b")
        #expect(trace.serverSpanID != 0 && trace.upstreamSpanID != 0 && trace.serverSpanID != trace.upstreamSpanID)
        let bytes = trace.upstreamTraceparent
        let traceparent = String(decoding: bytes.indices.map { bytes[$0] }, as: UTF8.self)
        #expect(traceparent.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
        #expect(traceparent.hasSuffix("-01"))
        // An unsampled parent: not traced, and its context passes on as sent.
        let (none, keep) = tracer(ratio: 1).begin(
            traceparent: unsampled, tracestate: { nil }, trusted: true, peer: "p", startNanos: 1)
        #expect(none == nil && !keep)
    }

    @Test func anUntrustedClientsParentIsRestartedUnlessJoinIsConfigured() throws {
        let (restarted, drop) = tracer(ratio: 1).begin(
            traceparent: sampled, tracestate: { "a=b" }, trusted: false, peer: "p", startNanos: 1)
        let trace = try #require(restarted)
        #expect(drop && trace.parentSpanID == 0 && trace.traceState == nil)
        #expect(trace.traceID != TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736))
        // Restarted and not sampled: the client's context is dropped, nothing traced.
        let (none, dropped) = tracer(ratio: 0).begin(
            traceparent: sampled, tracestate: { nil }, trusted: false, peer: "p", startNanos: 1)
        #expect(none == nil && dropped)
        let (joined, _) = tracer(ratio: 0, incoming: .join).begin(
            traceparent: sampled, tracestate: { nil }, trusted: false, peer: "p", startNanos: 1)
        #expect(joined?.parentSpanID == 0x00f0_67aa_0ba9_02b7)
    }

    @Test func theRatioSamplesAboutItsShareOfNewTraces() {
        let t = tracer(ratio: 0.25)
        var traced = 0
        for _ in 0..<4000
        where t.begin(traceparent: nil, tracestate: { nil }, trusted: false, peer: "p", startNanos: 1).0 != nil {
            traced += 1
        }
        // 1,000 expected; ±5 standard deviations (27 each) is far outside chance.
        #expect((865...1135).contains(traced), "\(traced) of 4000 traced at 0.25")
        #expect(
            tracer(ratio: 1).begin(traceparent: nil, tracestate: { nil }, trusted: false, peer: "p", startNanos: 1).0
                != nil
        )
    }

    @Test func theExportQueueIsBoundedAndCountsWhatItDrops() {
        let exporter = SpanExporter(config: TracingConfig(endpoint: "http://127.0.0.1:9/v1/traces"), version: "t")
        let span = SpanRecord(
            traceID: TraceID(high: 1, low: 2), spanID: 3, parentSpanID: 0, name: "GET", kind: .server, startNanos: 1,
            endNanos: 2)
        var spans = Array(repeating: span, count: 3000)
        exporter.submit(&spans)
        #expect(spans.isEmpty)
        #expect(exporter.queued == SpanExporter.maxQueued)
        #expect(exporter.droppedQueueFull.load(ordering: .relaxed) == 3000 - SpanExporter.maxQueued)
        #expect(exporter.metricsText.contains("tokengate_trace_spans_dropped_total{reason=\"queue_full\"} 952"))
    }

    @Test func theQueueHandsOverWholeBatchesInOrderAndSplitsOnlyAnOversizedOne() {
        func spans(_ ids: ClosedRange<UInt64>) -> [SpanRecord] {
            ids.map {
                SpanRecord(
                    traceID: TraceID(high: 1, low: 1), spanID: $0, parentSpanID: 0, name: "GET", kind: .server,
                    startNanos: 1, endNanos: 2)
            }
        }
        var q = SpanQueue()
        #expect(q.add(spans(1...3), limit: 10) == 0)
        #expect(q.add(spans(4...9), limit: 10) == 0)
        #expect(q.add(spans(10...12), limit: 10) == 2)  // one fits
        #expect(q.count == 10)
        // Two whole batches fit in 9; the third waits.
        #expect(q.take(9).flatMap { $0.map(\.spanID) } == Array(1...9))
        #expect(q.count == 1)
        #expect(q.add(spans(20...31), limit: 100) == 0)
        #expect(q.take(5).flatMap { $0.map(\.spanID) } == [10])
        // A batch larger than the limit is split, its rest left first in line.
        #expect(q.take(5).flatMap { $0.map(\.spanID) } == Array(20...24))
        #expect(q.take(50).flatMap { $0.map(\.spanID) } == Array(25...31))
        #expect(q.count == 0 && q.take(5).isEmpty)
    }

    @Test func aCallsURLLosesItsQueryFragmentAndUserinfo() {
        let (url, authority) = Tracer.withoutQuery("https://u:p@as.example:8443/oauth/introspect?token=t#f")
        #expect(url == "https://as.example:8443/oauth/introspect")
        #expect(authority == "as.example:8443")
        #expect(Tracer.withoutQuery("http://as.example/jwks").url == "http://as.example/jwks")
    }
}
