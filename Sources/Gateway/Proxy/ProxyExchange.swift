import Foundation
import Reactor

/// One client request being proxied: the upstream call's delegate, which hands the answer,
/// part by part, down the request's response chain (`ResponseStage`; the `ClientWriter`
/// last), keeps the upstream paused while the client or a stage is behind, and ends in
/// exactly one access-log line. Loop-thread only. Alive from `start` until it finishes
/// (the upstream call holds it as its delegate's owner through `selfRetain`).
final class ProxyExchange: UpstreamCallDelegate, ResponderObserver, ResponseControl {
    let services: WorkerServices
    let exchange: ServerExchange
    /// The exchange is its own responder: read as the `let` it is, no reference count.
    var responder: Responder { exchange }
    let context: RequestContext
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) private var call: UpstreamCall?
    /// The upstream is paused because the client is behind, or a stage holds it.
    @exclusivity(unchecked) private(set) var paused = false
    @exclusivity(unchecked) private var held = false
    @exclusivity(unchecked) private var done = false
    @exclusivity(unchecked) private(set) var status = 0
    @exclusivity(unchecked) private var upstreamStart = 0.0
    @exclusivity(unchecked) private var upstreamSeconds = 0.0
    /// Keeps self alive until `finish`.
    @exclusivity(unchecked) private var selfRetain: ProxyExchange?
    /// The call's pool, named only when the status page counts a 5xx or a failure. Not
    /// retained (a retain per request for a rare use): the call holds the pool for as long
    /// as it can report to this exchange.
    @exclusivity(unchecked) private unowned(unsafe) var pool: UpstreamPool? = nil
    /// The last stage of the chain, which every answer has.
    private let writer: ClientWriter
    /// The request's response stages, in chain order (empty on most routes).
    private let stages: [ResponseStage]
    /// Where the answer's parts go first: the first stage, or the writer.
    private unowned(unsafe) var first: ResponseStage
    /// The responder's observer before this exchange took its place: told its completion.
    @exclusivity(unchecked) private var nextObserver: (any ResponderObserver)?

    init(services: WorkerServices, exchange: ServerExchange, context: RequestContext, buffersResponse: Bool) {
        self.services = services
        self.exchange = exchange
        self.context = context
        stages = context.response.takeStages()
        writer = ClientWriter(
            services: services, responder: exchange, context: context, buffersResponse: buffersResponse)
        first = writer
        writer.owner = self
        first = ResponseStage.link(stages, to: writer, control: self)
    }

    var isDone: Bool { done }
    var headSent: Bool { responder.state == .streaming }

    /// Sends the request (made ready by `ProxyStage`) and takes its answer from here on.
    func start(pool: UpstreamPool, request: consuming UpstreamCall.Request) {
        selfRetain = self
        self.pool = pool
        upstreamStart = services.clock()
        if let trace = context.trace { trace.upstreamStartNanos = Tracer.nowNanos() }
        // The client leaving ends the exchange: the upstream call is abandoned.
        nextObserver = responder.takeObserver(self)
        sendAgain(consume request, on: pool)
    }

    func sendAgain(_ request: consuming UpstreamCall.Request, on pool: UpstreamPool) {
        if !stages.isEmpty { for stage in stages { stage.willSend(&request, to: pool) } }
        let call = UpstreamCall(pool: pool, request: consume request, delegate: self)
        self.call = call
        call.start()
    }

    /// The upstream said 100 Continue (or nothing for `continueTimeout`): the client hears it
    /// now, and its body streams upstream from here.
    func upstreamContinue() {
        guard !done else { return }
        exchange.body.sendContinue()
    }

    func upstreamInterim(_ head: HTTPResponseHead) {
        // RFC 9110 §15.2: a proxy forwards interim responses (103 Early Hints) as they come,
        // to clients that can take them (`forward_early_hints`).
        guard !done, services.config.earlyHints.forwards(behindTrustedProxy: context.behindTrustedProxy) else { return }
        responder.sendInterim(HeaderRules.interimHead(head, dropping: context.response.dropped))
    }

    func upstreamHead(_ head: HTTPResponseHead) {
        guard !done else { return }
        status = head.status
        context.trace?.upstreamStatus = head.status
        // The upstream's time to answer, should the client leave before the body ends.
        upstreamSeconds = services.clock() - upstreamStart
        if head.status >= 500, let pool {
            services.proxying.upstreamOutcomes.answered(head.status, pool: pool, now: services.clock())
        }
        first.head(head, bodyLength: head.bodyLength)
    }

    /// The upstream accepted the upgrade: the client hears its 101 (`UpgradeExchange.switching`),
    /// the request's access-log line is written, and the two connections become a tunnel; a
    /// 101 that does not answer the gateway's key is a 502, and its connection is closed.
    func upstreamSwitchedProtocols(_ head: HTTPResponseHead, _ upstream: TunnelEndpoint) {
        guard !done else { return upstream.close() }
        upstreamSeconds = services.clock() - upstreamStart
        switch UpgradeExchange.switching(head, context, exchange.head, fields: writer.clientFields) {
        case .failure(let refusal):
            upstream.close()
            services.metrics.upstreamError("bad_handshake")
            answer(refusal.response, close: true)
        case .success(let switching):
            guard let client = responder.switchProtocols(switching) else {
                upstream.close()
                return finish(status: 499, detail: "client gone before the 101")
            }
            finish(status: 101)
            services.proxying.tunnels.open(client: client, upstream: upstream, ctx: context, head: exchange.head)
        }
    }

    func upstreamBody(_ chunk: BodyChunk) {
        guard !done else { return }
        first.body(chunk)
    }

    func upstreamTrailers(_ fields: HTTP1Fields) {
        guard !done else { return }
        first.trailers(fields)
    }

    func upstreamComplete() {
        guard !done else { return }
        upstreamSeconds = services.clock() - upstreamStart
        // The call is over (its connection back in the pool); a second try makes another.
        call = nil
        first.end()
    }

    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool) {
        // Answered already (a tools/list answer refused while its call was being cancelled).
        guard !done else { return }
        upstreamSeconds = services.clock() - upstreamStart
        // What counts is whether the client heard a head: a stage may hold the upstream's.
        if case .clientBodyFailed(let why) = failure, !headSent {
            // The client's body, not the upstream, failed, before anything was answered. The
            // connection closes (its framing is spent).
            answer(ErrorResponse.clientBodyFailed(why, requestID: context.requestID), close: true)
            return
        }
        services.metrics.upstreamError(failure.kind)
        if let pool { services.proxying.upstreamOutcomes.failed(pool: pool, now: services.clock()) }
        if case .tlsHandshakeFailed(let reason) = failure {
            // Said in the log even with the access log off: an operator's certificate problem
            // (the verify error), which the client's 502 never names.
            services.log.warning(
                "upstream TLS handshake failed",
                metadata: ["request_id": "\(context.requestID)", "reason": .string(reason)])
        }
        if headSent {
            // Headers are gone already: the only honest signal left is a cut connection.
            services.log.warning(
                "upstream failed mid-response",
                metadata: ["request_id": "\(context.requestID)", "failure": "\(failure)"])
            responder.abort()
            finish(status: status)
            return
        }
        context.trace?.upstreamFailure = failure.isTimeout ? "timeout" : "unreachable"
        answer(ErrorResponse.upstreamFailed(failure, requestID: context.requestID))
    }

    func completed(_ responder: Responder, flushed: Bool) {
        nextObserver.take()?.completed(responder, flushed: flushed)
    }

    /// The client connection closed before the answer was written.
    func clientGone(_ responder: Responder) {
        guard !done else { return }
        call?.cancel()
        let headSent = responder.state == .streaming
        responder.abort()
        // 499: client closed the request (nginx's convention, for logs and metrics only), when
        // it left before the answer began. After the head it got the upstream's status (an
        // MCP client closes an SSE stream once it has read its answer): that is logged.
        finish(status: headSent ? status : 499, detail: headSent ? "client closed mid-response" : nil)
    }

    /// The exchange's one end after the head went out (or a tunnel opened): the access-log
    /// line, the stages' timers stopped, the call let go.
    func finish(status: Int, detail: String? = nil) {
        guard !done else { return }
        done = true
        call = nil
        writer.spool = nil
        if !stages.isEmpty { for stage in stages { stage.finished() } }
        services.requestFinished(
            context, status: status, bytes: writer.bytes, upstreamSeconds: upstreamSeconds, detail: detail)
        selfRetain = nil
    }

    /// The exchange's one end before a head went out: the gateway's own answer.
    private func answer(_ response: GatewayResponse, close: Bool = false) {
        done = true
        call = nil
        if !stages.isEmpty { for stage in stages { stage.finished() } }
        services.answer(exchange, context, response, upstreamSeconds: upstreamSeconds, close: close)
        selfRetain = nil
    }

    /// The upstream waits while the client is behind (or the spool is full) or a stage holds
    /// it, and is read again once neither is so.
    func pauseForClient() { pause(client: true, stage: held) }
    func clientDrained() { pause(client: false, stage: held) }
    func holdUpstream() { pause(client: paused, stage: true) }
    func releaseUpstream() { pause(client: paused, stage: false) }

    private func pause(client: Bool, stage: Bool) {
        let was = paused || held
        paused = client
        held = stage
        if was && !client && !stage { call?.resume() } else if !was && (client || stage) { call?.pause() }
    }

    /// The answer is cut where it stands (a spool that failed): the call cancelled, the
    /// connection aborted.
    func abort(detail: String) {
        call?.cancel()
        call = nil
        responder.abort()
        finish(status: status, detail: detail)
    }

    func answerInstead(_ response: GatewayResponse, upstreamError: String?) {
        leaveUpstream()
        if let upstreamError { services.metrics.upstreamError(upstreamError) }
        answer(response)
    }

    func cutAnswer(upstreamError: String, warning: String, detail: String) {
        leaveUpstream()
        services.metrics.upstreamError(upstreamError)
        services.log.warning("\(warning)", metadata: ["request_id": "\(context.requestID)", "reason": "\(detail)"])
        responder.abort()
        finish(status: 502, detail: detail)
    }

    /// Stops reading the upstream now, and cancels the call on the next loop turn: this may
    /// run inside the call's own delivery of a head or body, which must not end under it.
    func leaveUpstream() {
        upstreamSeconds = services.clock() - upstreamStart
        guard let call else { return }
        self.call = nil
        call.pause()
        services.loop.execute { call.cancel() }
    }
}
