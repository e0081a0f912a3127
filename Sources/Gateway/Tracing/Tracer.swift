import Glibc
import JOSE
import OTLP
import Reactor

/// One worker's tracing: which requests are traced (parent-based, a ratio of new traces),
/// their ids, and the finished spans, handed to the exporter in batches. Loop-thread only.
final class Tracer {
    let config: TracingConfig
    let exporter: SpanExporter
    private let loop: EventLoop
    /// A new trace is sampled when its id's low 63 bits are under this (OpenTelemetry's
    /// TraceIdRatioBased: the decision is the trace id's, the same in every process).
    private let ratioBound: UInt64
    private var finished: [SpanRecord] = []
    private var timer: LoopTimer?
    /// Random bytes for ids, drawn from OpenSSL 4 KB at a time.
    private var pool: [UInt8] = []
    private var poolAt = 0
    /// The traced request being handled now (see Tracer+Calls): the calls it makes are its.
    var current: RequestTrace?
    /// The main loop's tracer: a call with no request (keys, discovery) is a trace of its own.
    let background: Bool

    /// Spans a worker gathers before it hands them over, and the longest they wait.
    static let batch = 64
    static let flushInterval = 0.5

    init(config: TracingConfig, exporter: SpanExporter, loop: EventLoop, background: Bool = false) {
        self.config = config
        self.exporter = exporter
        self.loop = loop
        self.background = background
        ratioBound =
            config.sampleRatio >= 1 ? UInt64.max : UInt64((config.sampleRatio * 0x1p63).rounded(.down))
    }

    /// What the gateway does with a request's trace context: a traced request, or none; and
    /// whether the client's `traceparent`/`tracestate` stay off the upstream request (they
    /// do unless the gateway joined a trace it does not sample, which then passes on as sent).
    func begin(
        _ fields: HTTP1Fields, trusted: Bool, peer: String, startNanos: @autoclosure () -> UInt64 = Tracer.nowNanos()
    ) -> (RequestTrace?, dropClientContext: Bool) {
        // Not sampling new traces and not joining this client's: nothing to read or draw.
        let joins = trusted || config.incoming == .join
        guard joins || ratioBound != 0 else { return (nil, true) }
        // Two traceparent fields are no trace context (W3C Trace Context §3.2); several
        // tracestate fields are one list (§3.3.1.1, as RFC 9110 §5.3 combines them).
        let traceparent: (first: String?, count: Int) = joins ? fields.firstAndCount("traceparent") : (nil, 0)
        return begin(
            traceparent: traceparent.count == 1 ? traceparent.first : nil,
            tracestate: {
                let values = fields.values("tracestate")
                return values.count < 2 ? values.first : values.joined(separator: ",")
            },
            trusted: trusted, peer: peer, startNanos: startNanos())
    }

    func begin(
        traceparent: String?, tracestate: () -> String?, trusted: Bool, peer: String,
        startNanos: @autoclosure () -> UInt64
    ) -> (RequestTrace?, dropClientContext: Bool) {
        let parent =
            trusted || config.incoming == .join ? traceparent.flatMap { TraceContext.parse($0) } : nil
        let traceID: TraceID
        if let parent {
            guard parent.sampled else { return (nil, false) }
            traceID = parent.traceID
        } else {
            guard let id = newSampledTraceID() else { return (nil, true) }
            traceID = id
        }
        let trace = RequestTrace(
            traceID: traceID, parentSpanID: parent?.spanID ?? 0,
            traceState: parent != nil ? tracestate().flatMap { TraceContext.traceState($0) } : nil,
            serverSpanID: nextID(), upstreamSpanID: nextID(), startNanos: startNanos(), peer: peer)
        return (trace, true)
    }

    /// A new trace's id when the ratio samples it; nil otherwise.
    func newSampledTraceID() -> TraceID? {
        guard ratioBound != 0 else { return nil }
        let id = TraceID(high: nextID(), low: nextID())
        return ratioBound == UInt64.max || id.low >> 1 < ratioBound ? id : nil
    }

    /// A fresh span id: 8 random bytes, never zero (W3C Trace Context §3.2.2.4).
    func nextID() -> UInt64 {
        while true {
            if poolAt + 8 > pool.count {
                pool = SecureRandom.bytes(4096)
                poolAt = 0
            }
            var n: UInt64 = 0
            for i in 0..<8 { n = n << 8 | UInt64(pool[poolAt + i]) }
            poolAt += 8
            if n != 0 { return n }
        }
    }

    /// A traced request is answered: its SERVER span and its upstream call's CLIENT span.
    func requestFinished(_ trace: RequestTrace, _ ctx: RequestContext, status: Int) {
        trace.appendSpans(ctx, status: status, endNanos: Self.nowNanos(), to: &finished)
        spansAdded()
    }

    func record(_ span: consuming SpanRecord) {
        finished.append(span)
        spansAdded()
    }

    private func spansAdded() {
        if finished.count >= Self.batch {
            flush()
        } else if timer == nil {
            timer = LoopTimer(loop: loop, seconds: Self.flushInterval) { [unowned self] in
                self.timer = nil
                self.flush()
            }
        }
    }

    /// Hands what is gathered to the exporter (the batch is full, the timer, a drain).
    func flush() {
        timer?.cancel()
        timer = nil
        guard !finished.isEmpty else { return }
        exporter.submit(&finished)
        finished.reserveCapacity(Self.batch)
    }

    /// Unix time in nanoseconds (spans carry wall-clock times).
    static func nowNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
