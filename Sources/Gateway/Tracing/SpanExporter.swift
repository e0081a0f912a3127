import Foundation
import Glibc
import OTLP
import Reactor
import Synchronization

/// Where the workers' finished spans go: a bounded queue, and one thread of its own with an
/// event loop and a libcurl fetcher that POSTs them in batches to the collector (OTLP/HTTP,
/// binary protobuf), as OpenTelemetry's batch span processor does. A worker only appends
/// to the queue under a lock: encoding and the call happen on this thread, one export at a
/// time, so a collector that is down, slow or hung costs requests nothing. Past
/// `maxQueued` spans waiting, new ones are dropped and counted.
final class SpanExporter: @unchecked Sendable {
    /// OpenTelemetry's defaults for the batch span processor (`OTEL_BSP_MAX_QUEUE_SIZE`,
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`), with a shorter schedule (1 s, against 5 s).
    static let maxQueued = 2048
    static let batchSize = 512
    static let interval = 1.0

    let config: TracingConfig
    /// Spans the collector took (less the ones its `partial_success` says it rejected).
    let exported = Atomic<Int>(0)
    /// Spans dropped: the queue was full, or the collector refused or never answered.
    let droppedQueueFull = Atomic<Int>(0)
    let droppedExportFailed = Atomic<Int>(0)
    /// Export calls that failed (unreachable, timed out, a status other than 2xx).
    let exportFailures = Atomic<Int>(0)

    private let queue = Mutex(SpanQueue())
    private let loop = EventLoop()
    private let resource: [SpanRecord.Attribute]
    private let scope: (name: String, version: String)
    // Loop-thread only.
    private var fetcher: HTTPFetcher?
    private var ticker: LoopTimer?
    private var inFlight = false
    private var closing: DispatchSemaphore?
    private var thread: Thread?

    init(config: TracingConfig, version: String) {
        self.config = config
        resource =
            [.init("service.name", .string(config.serviceName))]
            + config.resourceAttributes.map { .init($0.0, .string($0.1)) }
            + [
                .init("service.version", .string(version)), .init("telemetry.sdk.name", .string("tokengate")),
                .init("telemetry.sdk.language", .string("swift"))
            ]
        scope = ("tokengate", version)
    }

    /// Starts the exporter's thread.
    func start() {
        let t = Thread { [self] in
            // Below the workers (nice 10, this thread alone on Linux): when the cores are
            // busy, requests come first and spans wait in the bounded queue, then drop
            // (counted), as a collector that is slow makes them.
            // (Linux: the nice value is per thread, and `who` 0 is the calling one, setpriority(2).)
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            // No redirect is followed: the collector's headers (an API key) go to the
            // endpoint configured and nowhere else; a 3xx counts as a failed export.
            var settings = FetchSettings(caFile: config.caFile)
            settings.maxRedirects = 0
            fetcher = HTTPFetcher(loop: loop, settings: settings)
            ticker = LoopTimer(loop: loop, seconds: Self.interval, repeating: true) { [unowned self] in
                self.exportNext()
            }
            loop.run()
            ticker?.cancel()
            fetcher = nil
        }
        t.name = "tokengate-otlp"
        thread = t
        t.start()
    }

    /// Hands finished spans over (any thread) and empties `spans` (the array itself is
    /// queued); what does not fit in the queue is dropped and counted.
    func submit(_ spans: inout [SpanRecord]) {
        guard !spans.isEmpty else { return }
        let handed = consume spans
        spans = []
        let wake = queue.withLock { q -> Bool in
            let dropped = q.add(handed, limit: Self.maxQueued)
            if dropped > 0 { droppedQueueFull.add(dropped, ordering: .relaxed) }
            guard q.count >= Self.batchSize, !q.wakeAsked else { return false }
            q.wakeAsked = true
            return true
        }
        if wake { loop.execute { [self] in exportNext() } }
    }

    /// Spans waiting in the queue now.
    var queued: Int { queue.withLock { $0.count } }

    /// Exports what is queued, then stops the thread; waits at most `seconds` (a collector
    /// that does not answer must not keep a stopping gateway alive). Call once, at exit.
    func close(within seconds: Double) {
        guard let thread, !thread.isFinished else { return }
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            closing = done
            exportNext()
        }
        _ = done.wait(timeout: .now() + seconds)
        loop.stop()
    }

    /// Loop thread: the next batch, unless one is on its way.
    private func exportNext() {
        guard !inFlight, let fetcher else { return }
        let batch = queue.withLock { q -> [[SpanRecord]] in
            q.wakeAsked = false
            return q.take(Self.batchSize)
        }
        let spans = batch.reduce(0) { $0 + $1.count }
        guard spans > 0 else {
            closing?.signal()
            return
        }
        inFlight = true
        let request = FetchRequest(
            url: config.endpoint, body: TraceExport.body(batch, resource: resource, scope: scope),
            headers: ["Content-Type: \(TraceExport.contentType)"] + config.headers, timeout: config.timeout,
            connectTimeout: min(config.timeout, 2), maxResponseBytes: 64 << 10)
        fetcher.fetch(request) { [self] result in
            inFlight = false
            switch result {
            case .success(let r) where (200..<300).contains(r.status):
                // OTLP/HTTP: a partial success is a 200 naming how many spans it rejected.
                let rejected = min(spans, TraceExport.rejectedSpans(r.body))
                exported.add(spans - rejected, ordering: .relaxed)
                droppedExportFailed.add(rejected, ordering: .relaxed)
            default:
                // Not retried: the next batch is already waiting, and a collector that is down
                // would only hold more spans in memory.
                exportFailures.add(1, ordering: .relaxed)
                droppedExportFailed.add(spans, ordering: .relaxed)
            }
            let more = queue.withLock { $0.count >= Self.batchSize }
            if more || closing != nil { exportNext() }
        }
    }

    /// `/metrics` lines for the exporter.
    var metricsText: String {
        var out = PrometheusText()
        out.single(
            "tokengate_trace_spans_exported_total", .counter, help: "Spans the OTLP collector accepted.",
            exported.load(ordering: .relaxed))
        out.labelled(
            "tokengate_trace_spans_dropped_total", .counter,
            help: "Spans never exported: the queue was full, or the export failed or was refused.",
            label: "reason",
            [
                ("queue_full", droppedQueueFull.load(ordering: .relaxed)),
                ("export_failed", droppedExportFailed.load(ordering: .relaxed))
            ])
        out.single(
            "tokengate_trace_export_failures_total", .counter,
            help: "OTLP export calls that failed: unreachable, timed out, or answered with a status other than 2xx.",
            exportFailures.load(ordering: .relaxed))
        return out.text
    }
}

/// The workers' batches as they came: handed over and taken whole, so that no span is
/// copied from one array to another on the way.
struct SpanQueue {
    var batches: [[SpanRecord]] = []
    var count = 0
    /// An export was asked for since the last one began (one wake-up per batch).
    var wakeAsked = false

    /// Queues `spans`, or what of them fits under `limit` spans waiting; returns how many did
    /// not fit.
    mutating func add(_ spans: [SpanRecord], limit: Int) -> Int {
        let room = max(0, limit - count)
        guard spans.count > room else {
            batches.append(spans)
            count += spans.count
            return 0
        }
        if room > 0 { batches.append(Array(spans.prefix(room))) }
        count += room
        return spans.count - room
    }

    /// Up to `limit` spans, whole batches first (a batch larger than that is split).
    mutating func take(_ limit: Int) -> [[SpanRecord]] {
        var taken = 0
        var n = 0
        while n < batches.count, taken + batches[n].count <= limit {
            taken += batches[n].count
            n += 1
        }
        var out = Array(batches[..<n])
        batches.removeFirst(n)
        if n == 0, let first = batches.first {
            out = [Array(first.prefix(limit))]
            batches[0].removeFirst(limit)
            taken = limit
        }
        count -= taken
        return out
    }
}
