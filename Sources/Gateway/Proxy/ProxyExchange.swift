import Foundation
import Reactor

/// One client request being proxied: forwards the upstream's response to the client as it
/// arrives, pausing the upstream while the client's output buffer is full, and ends in
/// exactly one access-log line. Loop-thread only. Alive from `start` until it finishes
/// (the upstream call and the close handler hold it).
final class ProxyExchange: UpstreamCallDelegate, DrainListener {
    /// Past this many bytes queued for a slow client, stop reading from the upstream.
    static let highWater = 256 << 10

    private let worker: Worker
    private let client: ServerRequest
    private let context: RequestContext
    private var call: UpstreamCall?
    private var paused = false
    private var done = false
    private var status = 0
    private var bytes = 0
    private var upstreamStart = 0.0
    private var upstreamSeconds = 0.0
    /// Keeps self alive until `finish`.
    private var selfRetain: ProxyExchange?

    init(worker: Worker, client: ServerRequest, context: RequestContext) {
        self.worker = worker
        self.client = client
        self.context = context
    }

    func start(pool: UpstreamPool, request: UpstreamCall.Request) {
        selfRetain = self
        upstreamStart = worker.clock()
        let call = UpstreamCall(pool: pool, request: request, delegate: self)
        self.call = call
        call.start(movingBodyFrom: client)
    }

    func upstreamHead(_ head: UpstreamResponseHead) {
        status = head.status
        let listed = HeaderRules.connectionTokens(head.headers.values("Connection"))
        let out = client.responseHeaders
        head.headers.copy(to: out) { $0.isToken && HeaderRules.forwardsResponseHeader($0.bytes, listed: listed) }
        for name in context.droppedResponseHeaders { out.removeAll(name) }
        if !context.ownCookies.isEmpty {
            // The upstream cannot plant, replace or delete the gateway's session cookies.
            let cookies = out.values("Set-Cookie")
            let kept = cookies.filter { !context.ownCookies.contains(String($0.prefix { $0 != "=" }).trimmingCharacters(in: .whitespaces)) }
            if kept.count != cookies.count {
                out.removeAll("Set-Cookie")
                for c in kept { out.add("Set-Cookie", c) }
            }
        }
        // Headers of the gateway's own (a fresh DPoP-Nonce, session cookies), after the
        // upstream's; where the gateway owns a header outright it was dropped just above.
        for (name, value) in context.responseHeaders { out.add(name, value) }
        out.add("X-Request-Id", context.requestID)
        if worker.draining { out.removeAll("Connection"); out.add("Connection", "close") }
        // The reason phrase is only passed on when it is plain text (RFC 9112 §4: HTAB, SP,
        // VCHAR); a CR in it would split the response for lenient clients.
        let plain = !head.reason.isEmpty && head.reason.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 < 0x7f) }
        client.startStreaming(status: head.status, reason: plain ? head.reason : HTTPStatus.reason(head.status))
    }

    func upstreamBody(_ chunk: BodyChunk) {
        bytes += chunk.count
        client.sendChunk(chunk, listener: self)
        if !paused && client.pendingOutput > ProxyExchange.highWater {
            paused = true
            call?.pause()
        }
    }

    func drained() {
        if paused {
            paused = false
            call?.resume()
        }
    }

    func upstreamComplete() {
        upstreamSeconds = worker.clock() - upstreamStart
        client.finishStreaming()
        finish(status: status)
    }

    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool) {
        upstreamSeconds = worker.clock() - upstreamStart
        worker.metrics.upstreamError("\(failure)")
        if afterHead {
            // Headers are gone already: the only honest signal left is a cut connection.
            worker.log.warning("upstream failed mid-response", metadata: ["request_id": "\(context.requestID)", "failure": "\(failure)"])
            let unflushed = worker.connections.forget(client.connection)
            client.abort()
            worker.connectionGone(unflushed: unflushed)
            finish(status: status)
            return
        }
        let code = failure.isTimeout ? 504 : 502
        let desc = failure.isTimeout ? "the upstream did not answer in time" : "the upstream could not be reached or answered badly"
        ErrorResponse.send(client, status: code, error: failure.isTimeout ? "gateway_timeout" : "bad_gateway",
                           description: desc, requestID: context.requestID, close: worker.draining)
        finish(status: code, detail: "\(failure)")
    }

    /// The client connection closed (told by `ClientConnections`).
    func clientClosed() {
        guard !done else { return }
        call?.cancel()
        // 499: client closed the request (nginx's convention, for logs and metrics only).
        finish(status: 499)
        // libevent detached the request from the dead connection; ending it frees it.
        client.finishStreaming()
    }

    private func finish(status: Int, detail: String? = nil) {
        guard !done else { return }
        done = true
        call = nil
        worker.requestFinished(context, status: status, bytes: bytes, upstreamSeconds: upstreamSeconds, detail: detail)
        selfRetain = nil
    }
}
