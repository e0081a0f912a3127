import Foundation
import Reactor

/// The last stage of every proxied answer's chain: writes the head with the fields the client
/// may have (hop-by-hop ones dropped, the gateway's own added, its cookies protected), then the
/// body, pausing the upstream while the client is behind, and ends the exchange. Past
/// `limits.response_buffer` behind, the rest goes to a temp file (`ResponseSpool`). One per
/// exchange, which owns it. Loop-thread only.
final class ClientWriter: ResponseStage {
    /// Set once, by the exchange that owns the writer (unowned: it owns it).
    unowned(unsafe) var owner: ProxyExchange! = nil
    /// The exchange's own, held here too: a strong `let` of the writer's is read without a
    /// reference count on every part of the answer, where one reached through the owner is not.
    let services: WorkerServices
    let responder: Responder
    let context: RequestContext
    /// The route's `buffering`: the answer may go to a temp file while the client is behind.
    let buffersResponse: Bool
    /// Body bytes passed on to the client (the access log's `bytes`).
    @exclusivity(unchecked) var bytes = 0
    /// The answer's spool, from its first byte past the buffer (nil: none yet, or never).
    @exclusivity(unchecked) var spool: ResponseSpool?
    /// The answer may be spooled, as far as its head and the limits say.
    @exclusivity(unchecked) var spoolAllowed = false
    /// The answer's fields, read for `isStream` only if a spool would start.
    @exclusivity(unchecked) var spoolFields: HTTP1Fields?

    init(services: WorkerServices, responder: Responder, context: RequestContext, buffersResponse: Bool) {
        self.services = services
        self.responder = responder
        self.context = context
        self.buffersResponse = buffersResponse
        super.init(position: .writer)
    }

    override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        spoolAllowed = mayBuffer(head)
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

    /// Moves `chunk` to the client, pausing the upstream while the client is behind (past
    /// the transport's `highWater`: 256 KiB on HTTP/1.1, 64 KiB on an HTTP/2 stream).
    override func body(_ chunk: BodyChunk) {
        bytes += chunk.count
        if spoolAllowed && spooled(chunk) { return }
        let pause = !owner.paused && responder.pendingOutput + chunk.count > responder.highWater
        responder.write(chunk, drained: pause ? { [weak owner] in owner?.clientDrained() } : nil)
        if pause { owner.pauseForClient() }
    }

    override func trailers(_ fields: HTTP1Fields) {
        if let spool, spool.pending > 0 { spool.trailers = fields } else { responder.trailers(fields) }
    }

    /// Logged before the last byte goes out: by the time a client holds the whole answer, its
    /// log line exists. What the spool still holds goes out first (`ResponseSpool.refill`).
    override func end(detail: String? = nil) {
        if let spool, spool.pending > 0 {
            spool.ended = true
            return
        }
        let responder = self.responder
        owner.finish(status: owner.status, detail: detail)
        responder.finish()
    }

    /// The upstream's response fields as the client gets them: those passed on (hop-by-hop
    /// ones dropped, the gateway's cookies protected), then the gateway's own (nil: none
    /// but the request id, which the caller sends as the head's `lastField`).
    func clientFields(_ head: HTTPResponseHead) -> (HTTP1ForwardedFields, HTTP1Fields?) {
        let listed = head.listsConnectionOptions ? HeaderRules.connectionTokens(head.fields) : []
        let dropped = context.response.dropped
        // Names are tokens already: the strict response parser refuses any other.
        var forwarded = HTTP1ForwardedFields(
            head.fields,
            keeping: {
                HeaderRules.forwardsResponseHeader($0, listed: listed) && !HeaderRules.equalsAnyName($0, dropped)
            })
        if !context.response.ownCookies.isEmpty {
            // The upstream cannot plant, replace or delete the gateway's session cookies.
            let ownCookies = context.response.ownCookies
            var doomed: [Int] = []
            forwarded.forEachValue(named: "Set-Cookie") { index, value in
                let end = value.firstIndex(of: UInt8(ascii: "=")) ?? value.count
                let name = String(decodingUTF8: value.extracting(first: end))
                if ownCookies.contains(name.trimmingCharacters(in: .whitespaces)) { doomed.append(index) }
            }
            for index in doomed { forwarded.drop(index) }
        }
        // Headers of the gateway's own (a fresh DPoP-Nonce, session cookies), after the
        // upstream's; where the gateway owns a header outright it was dropped just above.
        let added = context.response.added
        if added.isEmpty { return (forwarded, nil) }
        var own = HTTP1Fields()
        var bytes = 0
        for (name, value) in added { bytes += name.utf8.count + value.utf8.count }
        own.reserveCapacity(bytes: bytes, fields: added.count)
        for (name, value) in added { own.append(name, value) }
        return (forwarded, own)
    }
}

/// Proxy buffering: once the client is `limits.response_buffer` behind, the rest of the
/// upstream's answer goes to a temp file (`BodySpool`) and the upstream is read at its
/// own pace, so a slow reader holds a file descriptor and a little memory, not an upstream
/// connection (or an application worker behind it). Past the response's or the process's
/// disk cap the upstream is paused, as without a spool. Streams are never buffered.
extension ClientWriter {
    /// Whether this answer may be spooled, as far as the head's route and limits say: not on a
    /// route with `buffering: false`, nor with spooling off. Flags only: this runs on every
    /// proxied answer, and most never fall behind; what the answer is (`isStream`) is read
    /// only when a spool would start.
    func mayBuffer(_ head: HTTPResponseHead) -> Bool {
        guard buffersResponse, services.proxying.spoolBudget != nil else { return false }
        guard services.config.limits.responseSpoolMax > 0, services.config.limits.spoolTotal > 0 else { return false }
        spoolFields = head.fields
        return true
    }

    /// A stream whose bytes must reach the client as they come: an event stream, gRPC or
    /// gRPC-Web (`GRPCCall`'s reading of the type), or an answer the upstream marks
    /// `X-Accel-Buffering: no` (as nginx honours).
    static func isStream(_ fields: HTTP1Fields) -> Bool {
        if GRPCCall(fields) != nil { return true }
        var stream = false
        fields.forEachValue(named: "content-type") { value in
            if HeaderRules.startsCaseless(value, "text/event-stream") { stream = true }
        }
        fields.forEachValue(named: "x-accel-buffering") { value in
            if value.count == 2 && HeaderRules.startsCaseless(value, "no") { stream = true }
        }
        return stream
    }

    /// Spools `chunk` if the client is behind or the spool already holds bytes (which must
    /// go first); false: the caller writes it to the client.
    private func spooled(_ chunk: BodyChunk) -> Bool {
        // One number of the limits, not a copy of them all (a copy retains the strings in it).
        let responseBuffer = services.config.limits.responseBuffer
        if spool == nil {
            // Behind: what waits for the client already fills the buffer (a fast client's
            // output is written out between reads, whatever a read's size).
            guard responder.pendingOutput >= min(responseBuffer, responder.highWater),
                let budget = services.proxying.spoolBudget
            else { return false }
            let limits = services.config.limits
            if let fields = spoolFields {
                spoolFields = nil
                if Self.isStream(fields) {
                    spoolAllowed = false
                    return false
                }
            }
            guard
                let made = BodySpool(
                    directory: limits.spoolDirectory, budget: budget, maxBytes: limits.responseSpoolMax)
            else {
                spoolAllowed = false
                services.proxying.spoolBudget?.countFailure()
                return false
            }
            spool = ResponseSpool(made, writer: self)
        }
        guard let spool else { return false }
        if spool.pending == 0
            && responder.pendingOutput + chunk.count <= min(responseBuffer, responder.highWater)
        {
            return false
        }
        spool.append(chunk)
        return true
    }
}
