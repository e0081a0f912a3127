import Foundation
import Reactor

/// One client request being proxied: forwards the upstream's response to the client as it
/// arrives, pausing the upstream while the client's output buffer is full, and ends in
/// exactly one access-log line. Loop-thread only. Alive from `start` until it finishes
/// (the upstream call holds it as its delegate's owner through `selfRetain`).
final class ProxyExchange: UpstreamCallDelegate, ClientGoneObserver {
    let services: WorkerServices
    let exchange: ServerExchange
    /// The exchange is its own responder: read as the `let` it is, no reference count.
    var responder: Responder { exchange }
    let context: RequestContext
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check). What is not
    // private here is for the tools/list relay (MCP/ProxyExchange+ToolList.swift).
    @exclusivity(unchecked) var call: UpstreamCall?
    @exclusivity(unchecked) var paused = false
    @exclusivity(unchecked) var done = false
    @exclusivity(unchecked) var status = 0
    @exclusivity(unchecked) var bytes = 0
    @exclusivity(unchecked) var upstreamStart = 0.0
    @exclusivity(unchecked) var upstreamSeconds = 0.0
    /// Keeps self alive until `finish`.
    @exclusivity(unchecked) var selfRetain: ProxyExchange?
    /// The call's pool, named only when the status page counts a 5xx or a failure. Not
    /// retained (a retain per request for a rare use): the call holds the pool for as long
    /// as it can report to this exchange.
    @exclusivity(unchecked) private unowned(unsafe) var pool: UpstreamPool? = nil
    /// A `tools/list` answer being filtered (ProxyExchange+ToolList); nil for every other
    /// request, and once the answer needs no more reading, so the plain path below is taken.
    @exclusivity(unchecked) var toolList: ToolListRelay?
    /// A JSON `tools/list` answer's head, held until its body is filtered and its length known.
    @exclusivity(unchecked) var heldHead: HTTPResponseHead?
    /// A `tools/list` answer waits for the PDP's answers on its tools (ToolListDecisions):
    /// the upstream is paused meanwhile, and its end, if it comes, is taken after them.
    @exclusivity(unchecked) var toolListWaiting = false
    @exclusivity(unchecked) var completeAfterDecisions = false
    /// The response may go to a temp file while the client is behind (ProxyExchange+Spool).
    @exclusivity(unchecked) var spoolAllowed = false
    @exclusivity(unchecked) var spool: BodySpool?
    /// The answer's fields, read for `isStream` only if a spool would start.
    @exclusivity(unchecked) var spoolFields: HTTP1Fields?
    @exclusivity(unchecked) var refillArmed = false
    @exclusivity(unchecked) var refilling = false
    @exclusivity(unchecked) var refillAgain = false
    /// The upstream's answer is complete while the spool still holds part of it; its
    /// trailers wait for the spool too.
    @exclusivity(unchecked) var upstreamEnded = false
    @exclusivity(unchecked) var heldTrailers: HTTP1Fields?
    /// The upstream's answer is a DPoP nonce challenge the gateway answers itself: its body is
    /// read and dropped, then the request goes again (`tryAgain`; UpstreamDPoP.swift).
    @exclusivity(unchecked) var retryWithNonce: (() -> UpstreamCall.Request)?

    /// An answer being signed (`sign_response`), held until its body is whole.
    @exclusivity(unchecked) var signedHead: HTTPResponseHead?
    /// A streamed answer the gateway ends itself (`context.streamEnd`, StreamEnd.swift).
    @exclusivity(unchecked) var streamEndTimer: LoopTimer?
    /// Its last four bytes sent, when it may end with a closing event (`sendTracked`), and
    /// whether its head lets it (a 200 SSE stream: `takesClosingEvent`).
    @exclusivity(unchecked) var streamTail: UInt32 = 0
    @exclusivity(unchecked) var closingEventAllowed = false

    /// The route's `buffering`: the answer may go to a temp file while the client is behind.
    let buffersResponse: Bool

    init(services: WorkerServices, exchange: ServerExchange, context: RequestContext, buffersResponse: Bool) {
        self.services = services
        self.exchange = exchange
        self.context = context
        self.buffersResponse = buffersResponse
    }

    func start(pool: UpstreamPool, request: consuming UpstreamCall.Request) {
        var request = request
        let wait = services.config.limits.continueTimeout
        if request.body?.expectsContinue == true, wait > 0 {
            // RFC 9110 §10.1.1: a proxy forwards the expectation and lets the origin decide
            // whether the body is wanted; the client hears the upstream's 100 (`upstreamContinue`),
            // or its final answer without having sent the body. A silent upstream gets the body
            // after `limits.continue_timeout` (curl waits 1 s too; a client may send without a 100).
            request.continueTimeout = wait
        }
        if let body = request.body, body === exchange.body, body.framing != .none {
            // The client's own body streams upstream: a gRPC call's is bounded per message.
            request.bodyLimit = RequestBodyLimit.of(
                exchange.head.fields, limits: services.config.limits, readWhole: false)
        }
        if let end = context.streamEnd { armStreamEnd(end, &request) }
        if let timeout = context.grpcTimeout {
            // A gRPC call's deadline bounds its upstream call too: past it the client has
            // given up, and the upstream's work would be for nobody.
            request.deadline = timeout.seconds
        }
        if let filter = context.toolListFilter {
            toolList = ToolListRelay(filter: filter)
            Self.askForIdentity(&request)
        }
        selfRetain = self
        self.pool = pool
        context.upstreamDPoP?.pool = pool
        upstreamStart = services.clock()
        if let trace = context.trace { trace.upstreamStartNanos = Tracer.nowNanos() }
        // The client leaving ends the exchange: the upstream call is abandoned.
        responder.clientGoneObserver = self
        let call = UpstreamCall(pool: pool, request: consume request, delegate: self)
        self.call = call
        call.start()
    }

    /// Sends the request again on the same pool (a DPoP nonce challenge answered). The first
    /// call finished whole, so its connection went back to the pool.
    func tryAgain(_ request: consuming UpstreamCall.Request) {
        guard let pool = context.upstreamDPoP?.pool else {
            upstreamFailed(.connectionFailed, afterHead: false)
            return
        }
        var request = request
        // A stream the gateway ends keeps its bound on silences in the second call too.
        if let end = context.streamEnd { request.idleTimeout = end.left(services.wallClock.now) + 10 }
        let call = UpstreamCall(pool: pool, request: request, delegate: self)
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
        let listed = HeaderRules.connectionTokens(head.fields)
        // What the final answer may not carry, an interim one may not either: the fields the
        // gateway owns (DPoP-Nonce, …) and cookies (which could name the gateway's own).
        let dropped = context.droppedResponseHeaders + ["Set-Cookie"]
        responder.sendInterim(
            HTTPResponseHead(
                status: head.status,
                fields: head.fields.filter(names: {
                    HeaderRules.forwardsResponseHeader($0, listed: listed) && !HeaderRules.equalsAnyName($0, dropped)
                })))
    }

    func upstreamHead(_ head: HTTPResponseHead) {
        if let dpop = context.upstreamDPoP, let retry = dpop.takesRetry(head) {
            retryWithNonce = retry
            return
        }
        status = head.status
        context.trace?.upstreamStatus = head.status
        // The upstream's time to answer, should the client leave before the body ends.
        upstreamSeconds = services.clock() - upstreamStart
        if head.status >= 500, let pool {
            services.upstreamOutcomes.answered(head.status, pool: pool, now: services.clock())
        }
        if context.responseSigner != nil {
            // A signed answer is held whole (ProxyExchange+Signing); a stream goes unsigned.
            if ResponseSigner.signs(head) {
                signedHead = head
                return
            }
            context.responseSigner = nil
        }
        if toolList != nil {
            toolListHead(head)
            return
        }
        spoolAllowed = mayBuffer(head)
        if context.streamEnd?.closingEvent != nil { closingEventAllowed = Self.takesClosingEvent(head) }
        sendHead(head, bodyLength: head.bodyLength)
    }

    /// The upstream's head goes to the client, with the body's length if known.
    func sendHead(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        let (forwarded, own) = clientFields(head)
        // The reason phrase is only passed on when it is plain text (RFC 9112 §4: HTAB, SP,
        // VCHAR); a CR in it would split the response for lenient clients.
        var reason = head.reason
        if let r = reason, r.isEmpty || !r.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 < 0x7f) }) { reason = nil }
        responder.startStreaming(
            HTTPResponseHead(
                status: head.status, reason: reason, fields: own ?? responder.takeFields(), forwarded: forwarded,
                lastField: ("X-Request-Id", context.requestID), bodyLength: bodyLength),
            close: services.draining)
    }

    /// The upstream accepted the upgrade: the 101 goes to the client (with the upstream's
    /// `Sec-WebSocket-Accept`, `-Protocol`, `-Extensions`), the request's access-log line is
    /// written, and the two connections become a tunnel. Only a 101 that answers the client's
    /// key opens one (RFC 6455 §4.1): any other is a 502, and its connection is closed, as
    /// what follows it on the wire is of unknown meaning.
    func upstreamSwitchedProtocols(_ head: HTTPResponseHead, _ upstream: TunnelEndpoint) {
        guard !done else {
            upstream.close()
            return
        }
        upstreamSeconds = services.clock() - upstreamStart
        if let refusal = WebSocketHandshake.refusal(of: head.fields, key: context.upstreamWebSocketKey) {
            upstream.close()
            services.metrics.upstreamError("bad_handshake")
            done = true
            call = nil
            services.answer(
                exchange, context,
                ErrorResponse.make(
                    502, error: "bad_gateway", description: "the upstream did not complete the WebSocket handshake",
                    requestID: context.requestID, detail: "upstream 101: \(refusal.rawValue)"),
                upstreamSeconds: upstreamSeconds, close: true)
            selfRetain = nil
            return
        }
        // The upstream answered the gateway's key; the client hears the answer to its own.
        context.droppedResponseHeaders.append("Sec-WebSocket-Accept")
        let (forwarded, own) = clientFields(head)
        var fields = own ?? HTTP1Fields()
        fields.append("Upgrade", "websocket")
        fields.append(
            "Sec-WebSocket-Accept", WebSocketHandshake.accept(forKey: UpgradeExchange.key(exchange.head)))
        let switching = HTTPResponseHead(
            status: 101, fields: fields, forwarded: forwarded, lastField: ("X-Request-Id", context.requestID))
        guard let client = responder.switchProtocols(switching) else {
            upstream.close()
            finish(status: 499, detail: "client gone before the 101")
            return
        }
        bytes = 0
        finish(status: 101)
        services.tunnels.open(client: client, upstream: upstream, ctx: context, head: exchange.head)
    }

    /// The upstream's response fields as the client gets them: those passed on (hop-by-hop
    /// ones dropped, the gateway's cookies protected), then the gateway's own (nil: none
    /// but the request id, which the caller sends as the head's `lastField`).
    private func clientFields(_ head: HTTPResponseHead) -> (HTTP1ForwardedFields, HTTP1Fields?) {
        let listed = head.listsConnectionOptions ? HeaderRules.connectionTokens(head.fields) : []
        let dropped = context.droppedResponseHeaders
        // Names are tokens already: the strict response parser refuses any other.
        var forwarded = HTTP1ForwardedFields(
            head.fields,
            keeping: {
                HeaderRules.forwardsResponseHeader($0, listed: listed) && !HeaderRules.equalsAnyName($0, dropped)
            })
        if !context.ownCookies.isEmpty {
            // The upstream cannot plant, replace or delete the gateway's session cookies.
            var doomed: [Int] = []
            forwarded.forEachValue(named: "Set-Cookie") { index, value in
                let end = value.firstIndex(of: UInt8(ascii: "=")) ?? value.count
                let name = String(decodingUTF8: value.extracting(first: end))
                if context.ownCookies.contains(name.trimmingCharacters(in: .whitespaces)) { doomed.append(index) }
            }
            for index in doomed { forwarded.drop(index) }
        }
        // Headers of the gateway's own (a fresh DPoP-Nonce, session cookies), after the
        // upstream's; where the gateway owns a header outright it was dropped just above.
        if context.responseHeaders.isEmpty { return (forwarded, nil) }
        var own = HTTP1Fields()
        var bytes = 0
        for (name, value) in context.responseHeaders { bytes += name.utf8.count + value.utf8.count }
        own.reserveCapacity(bytes: bytes, fields: context.responseHeaders.count)
        for (name, value) in context.responseHeaders { own.append(name, value) }
        return (forwarded, own)
    }

    func upstreamBody(_ chunk: BodyChunk) {
        if retryWithNonce != nil { return }
        if signedHead != nil {
            holdSigned(chunk)
            return
        }
        if toolList != nil {
            toolListBody(chunk)
            return
        }
        if closingEventAllowed, streamEndTimer != nil {
            sendTracked(chunk)
            return
        }
        send(chunk)
    }

    /// Moves `chunk` to the client, pausing the upstream while the client is behind (past
    /// the transport's `highWater`: 256 KiB on HTTP/1.1, 64 KiB on an HTTP/2 stream).
    func send(_ chunk: BodyChunk) {
        bytes += chunk.count
        if spoolAllowed && spooled(chunk) { return }
        let pause = !paused && responder.pendingOutput + chunk.count > responder.highWater
        responder.write(chunk, drained: pause ? { [weak self] in self?.drained() } : nil)
        if pause {
            paused = true
            call?.pause()
        }
    }

    func drained() {
        if paused && !toolListWaiting {
            paused = false
            call?.resume()
        }
    }

    /// An HTTP/2 upstream's trailer section (gRPC's `grpc-status`) goes on to the client as
    /// it came, where its protocol carries one.
    func upstreamTrailers(_ fields: HTTP1Fields) {
        // A signed answer's trailers are not signed: they are not passed on either.
        if retryWithNonce != nil || signedHead != nil { return }
        if let spool, spool.pending > 0 { heldTrailers = fields } else { responder.trailers(fields) }
    }

    func upstreamComplete() {
        if let retry = retryWithNonce {
            retryWithNonce = nil
            tryAgain(retry())
            return
        }
        upstreamSeconds = services.clock() - upstreamStart
        if let head = signedHead {
            signedHead = nil
            sendSigned(head)
        }
        if let head = heldHead {
            heldHead = nil
            toolListComplete(head)
            return
        }
        if toolListWaiting {
            completeAfterDecisions = true
            return
        }
        if let spool, spool.pending > 0 {
            // The rest goes out as the client takes it (`refill`), and then the answer ends.
            upstreamEnded = true
            call = nil
            return
        }
        // Logged before the last byte goes out: by the time a client holds the whole
        // answer, its log line exists.
        let responder = self.responder
        finish(status: status)
        responder.finish()
    }

    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool) {
        // Answered already (a tools/list answer refused while its call was being cancelled).
        guard !done else { return }
        // A nonce challenge whose body broke off: the client has heard nothing yet.
        let afterHead = afterHead && retryWithNonce == nil
        retryWithNonce = nil
        upstreamSeconds = services.clock() - upstreamStart
        if case .clientBodyFailed(let why) = failure, !afterHead {
            // The client's body, not the upstream, failed, before anything was answered. The
            // connection closes (its framing is spent).
            services.answer(
                exchange, context, ErrorResponse.clientBodyFailed(why, requestID: context.requestID),
                upstreamSeconds: upstreamSeconds, close: true)
            done = true
            call = nil
            selfRetain = nil
            return
        }
        services.metrics.upstreamError(failure.kind)
        if let pool { services.upstreamOutcomes.failed(pool: pool, now: services.clock()) }
        if case .tlsHandshakeFailed(let reason) = failure {
            // Said in the log even with the access log off: an operator's certificate problem
            // (the verify error), which the client's 502 never names.
            services.log.warning(
                "upstream TLS handshake failed",
                metadata: ["request_id": "\(context.requestID)", "reason": .string(reason)])
        }
        if afterHead && heldHead == nil {
            // Headers are gone already: the only honest signal left is a cut connection.
            services.log.warning(
                "upstream failed mid-response",
                metadata: ["request_id": "\(context.requestID)", "failure": "\(failure)"])
            responder.abort()
            finish(status: status)
            return
        }
        done = true
        call = nil
        let code = failure.isTimeout ? 504 : 502
        context.trace?.upstreamFailure = failure.isTimeout ? "timeout" : "unreachable"
        let desc =
            failure.isTimeout
            ? "the upstream did not answer in time" : "the upstream could not be reached or answered badly"
        services.answer(
            exchange, context,
            ErrorResponse.make(
                code, error: failure.isTimeout ? "gateway_timeout" : "bad_gateway",
                description: desc, requestID: context.requestID, detail: "\(failure)"),
            upstreamSeconds: upstreamSeconds)
        selfRetain = nil
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

    func finish(status: Int, detail: String? = nil) {
        guard !done else { return }
        done = true
        streamEndTimer?.cancel()
        streamEndTimer = nil
        call = nil
        spool = nil
        services.requestFinished(
            context, status: status, bytes: bytes, upstreamSeconds: upstreamSeconds, detail: detail)
        selfRetain = nil
    }

    /// An answer the gateway held (to filter or sign it) cannot go on, and nothing of it has
    /// been sent: the upstream is left, and the client gets a 502 in its place.
    func refuseHeldAnswer(metric: String, description: String, detail: String) {
        abandonCall()
        services.metrics.upstreamError(metric)
        done = true
        services.answer(
            exchange, context,
            ErrorResponse.make(
                502, error: "bad_gateway", description: description, requestID: context.requestID, detail: detail),
            upstreamSeconds: upstreamSeconds)
        selfRetain = nil
    }

    /// Stops reading the upstream now, and cancels the call on the next loop turn: this runs
    /// inside the call's own delivery of a head or body, which must not end under it.
    func abandonCall() {
        guard let call else { return }
        self.call = nil
        call.pause()
        services.loop.execute { call.cancel() }
    }
}
