import Foundation

@testable import Reactor

/// One loop and one pool for an upstream-client test, run in bounded steps on the test's
/// thread: `call` runs the loop until the exchange ends or its limit passes.
final class UpstreamHarness {
    let loop = EventLoop()
    let pool: UpstreamPool

    init(
        port: UInt16, host: String = "127.0.0.1", connectTimeout: Double = 2, responseTimeout: Double = 2,
        maxIdle: Int = 4, surplusGrace: Double = 1,
        tls: UpstreamTLSContext? = nil, maxConnections: Int = .max, maxPending: Int = 0, pendingTimeout: Double = 5
    ) {
        var endpoint = UpstreamEndpoint(
            host: host, port: port, connectTimeout: connectTimeout,
            responseTimeout: responseTimeout, maxIdle: maxIdle, tls: tls, maxConnections: maxConnections,
            maxPending: maxPending, pendingTimeout: pendingTimeout)
        endpoint.surplusGrace = surplusGrace
        pool = UpstreamPool(loop: loop, endpoint: endpoint)
    }

    /// Starts a call and runs the loop until it completes or fails (or `limit` seconds).
    /// `setup` may hook the recorder (pause, cancel) before the call starts.
    @discardableResult
    func call(
        _ method: HTTPMethod = .GET, _ target: String = "/",
        fields: [(name: String, value: String)] = [("Host", "upstream")],
        body: RequestBody? = nil, continueTimeout: Double? = nil, trailerPolicy: RequestTrailerPolicy? = nil,
        limit: Double = 5, setup: (UpstreamRecorder) -> Void = { _ in }
    ) -> UpstreamRecorder {
        let recorder = UpstreamRecorder()
        setup(recorder)
        var request = UpstreamCall.Request(method: method, target: target, fields: HTTP1Fields(fields), body: body)
        request.continueTimeout = continueTimeout
        request.trailerPolicy = trailerPolicy
        let call = UpstreamCall(pool: pool, request: request, delegate: recorder)
        recorder.call = call
        run(limit: limit) { finish in
            recorder.onEnd = finish
            call.start()
        }
        return recorder
    }

    /// Runs the loop until `finish` is called or `limit` passes; true if finished.
    @discardableResult
    func run(limit: Double, _ start: (_ finish: @escaping () -> Void) -> Void) -> Bool {
        loop.runStep(limit: limit, start)
    }

    /// Lets the loop run for `seconds` (idle connections notice closes, timers fire).
    func wait(_ seconds: Double) {
        run(limit: seconds + 5) { [loop] finish in loop.schedule(after: seconds, finish) }
    }
}

/// Records what an `UpstreamCall` tells its delegate, in order.
final class UpstreamRecorder: UpstreamCallDelegate {
    var call: UpstreamCall?
    var interim: [HTTPResponseHead] = []
    var head: HTTPResponseHead?
    var body: [UInt8] = []
    var chunkTimes: [Date] = []
    var completed = false
    var failure: UpstreamFailure?
    var failedAfterHead: Bool?
    /// Every delegate call, by name, in order.
    var events: [String] = []
    var onEnd: (() -> Void)?
    /// Called after each body chunk was taken.
    var onBody: ((UpstreamRecorder) -> Void)?
    var onHead: ((UpstreamRecorder) -> Void)?

    var bodyText: String { String(decoding: body, as: UTF8.self) }

    func upstreamContinue() { events.append("continue") }

    func upstreamInterim(_ head: HTTPResponseHead) {
        events.append("interim \(head.status)")
        interim.append(head)
    }

    func upstreamHead(_ head: HTTPResponseHead) {
        events.append("head \(head.status)")
        self.head = head
        onHead?(self)
    }

    func upstreamBody(_ chunk: BodyChunk) {
        events.append("body")
        body += chunk.take()
        chunkTimes.append(Date())
        onBody?(self)
    }

    func upstreamComplete() {
        events.append("complete")
        completed = true
        onEnd?()
    }

    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool) {
        events.append("failed \(failure)")
        self.failure = failure
        failedAfterHead = afterHead
        onEnd?()
    }
}

/// A request body that arrives in scripted chunks, one per `interval` on the loop (0: all
/// within the `stream` call), honouring pause and resume, and optionally failing or ending
/// with a trailer section.
final class ScriptedRequestBody: RequestBody {
    let framing: RequestBodyFraming
    private let loop: EventLoop
    private var chunks: ArraySlice<[UInt8]>
    private let interval: Double
    private let failure: RequestBodyFailure?
    private let trailers: HTTP1Fields
    private var sink: RequestBodySink?
    private var scheduled = false
    private(set) var paused = false
    private(set) var pauses = 0
    private(set) var resumes = 0
    private(set) var delivered = 0
    /// The client waits for `100 Continue`; `sendContinue` (or `stream`) says it, counted.
    private(set) var expectsContinue: Bool
    private(set) var continues = 0
    private(set) var streamed = false

    init(
        loop: EventLoop, framing: RequestBodyFraming, chunks: [[UInt8]], interval: Double = 0,
        failure: RequestBodyFailure? = nil, expectsContinue: Bool = false, trailers: HTTP1Fields = HTTP1Fields()
    ) {
        self.trailers = trailers
        self.expectsContinue = expectsContinue
        self.loop = loop
        self.framing = framing
        self.chunks = chunks[...]
        self.interval = interval
        self.failure = failure
    }

    func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) { fatalError("not used") }
    func discard() {}

    func sendContinue() {
        guard expectsContinue else { return }
        expectsContinue = false
        continues += 1
    }

    func stream(to sink: RequestBodySink) {
        sendContinue()
        streamed = true
        self.sink = sink
        if interval == 0 { pump() } else { schedule() }
    }

    func pause() {
        if !paused { pauses += 1 }
        paused = true
    }

    func resume() {
        guard paused else { return }
        paused = false
        resumes += 1
        if interval == 0 { loop.execute { [self] in pump() } } else { schedule() }
    }

    private func schedule() {
        guard !scheduled else { return }
        scheduled = true
        loop.schedule(after: interval) { [self] in
            scheduled = false
            guard step() else { return }
            schedule()
        }
    }

    private func pump() {
        while step() {}
    }

    /// Delivers one chunk (or the end); false when nothing more should follow now.
    private func step() -> Bool {
        guard let sink, !paused else { return false }
        if let chunk = chunks.popFirst() {
            let buffer = ByteQueue(chunk)
            sink.requestBody(buffer.chunk)
            delivered += chunk.count
            precondition(buffer.count == 0, "the sink must move the whole chunk")
            return true
        }
        self.sink = nil
        if let failure { sink.requestBodyFailed(failure) } else { sink.requestBodyEnd(trailers: trailers) }
        return false
    }
}
