import Reactor

/// A `tools/list` answer on its way back (ToolListRelay says what is done to it), as a response
/// stage: the upstream is asked for an uncoded body, a JSON answer is held and passed on
/// filtered with its new length, an SSE answer streams with its response event rewritten.
/// What cannot be filtered is refused: a 502 while nothing has been sent, else a cut
/// connection. Installed by the MCP stage on a `tools/list` POST (and on a resumed stream,
/// and, marking only, on the other cacheable calls of a route whose rules differ by caller).
final class ToolListStage: ResponseStage {
    /// nil once the answer needs no more reading: the parts pass as they come.
    private var relay: ToolListRelay?
    /// A JSON answer's head, held until its body is filtered and its length known.
    private var heldHead: HTTPResponseHead?
    /// A stream's response event waits for the PDP's answers on its tools (ToolListDecisions):
    /// the upstream is held meanwhile, and its end, if it comes, is taken after them.
    private var waiting = false
    private var endAfterDecisions = false
    /// An HTTP/2 upstream's trailers after a held JSON answer: they follow its body.
    private var heldTrailers: HTTP1Fields?

    init(filter: ToolListFilter) {
        relay = ToolListRelay(filter: filter)
        super.init(position: .content)
    }

    /// RFC 9110 §12.5.3: "If no Accept-Encoding header field is in the request, any content
    /// coding is considered acceptable", so the client's is replaced by `identity` rather than
    /// dropped: the gateway must read the answer to filter it.
    override func willSend(_ request: inout UpstreamCall.Request, to pool: UpstreamPool) {
        guard relay != nil else { return }
        var doomed: [Int] = []
        request.forwarded?.forEachValue(named: "Accept-Encoding") { index, _ in doomed.append(index) }
        for index in doomed { request.forwarded?.drop(index) }
        request.fields.append("Accept-Encoding", "identity")
    }

    override func head(_ head: HTTPResponseHead, bodyLength: UInt64?) {
        guard relay != nil else { return next.head(head, bodyLength: bodyLength) }
        let mode: ToolListRelay.Mode
        do {
            mode = try ToolListRelay.mode(status: head.status, fields: head.fields)
        } catch {
            refuse(error)
            return
        }
        let context = exchange.context
        if mode != .untouched {
            // The answer is this caller's (cacheScope "private" in it): no shared cache may
            // keep it, whatever the server said.
            context.response.dropped.append("Cache-Control")
            context.response.added.append(("Cache-Control", "private, no-store"))
        }
        switch mode {
        case .untouched:
            relay = nil
            next.head(head, bodyLength: bodyLength)
        case .json:
            heldHead = head
        case .eventStream:
            // The rewritten event changes the body's length: chunked (or close-delimited), so
            // an upstream Content-Length cannot frame it.
            context.response.dropped.append("Content-Length")
            next.head(head, bodyLength: nil)
        }
    }

    override func body(_ chunk: BodyChunk) {
        guard relay != nil else { return next.body(chunk) }
        let input = chunk.take()
        if heldHead != nil {
            do {
                try relay!.hold(input)
            } catch {
                refuse(error)
            }
            return
        }
        let output: [UInt8]
        do {
            output = try relay!.stream(input)
        } catch {
            cut(error)
            return
        }
        if !output.isEmpty { next.body(ByteQueue(output).chunk) }
        if !waiting, !exchange.isDone, let names = relay?.awaiting, let decisions = relay?.filter.decisions {
            // The response event waits for the PDP: the upstream too, until it has answered.
            waiting = true
            exchange.holdUpstream()
            // The closure holds the exchange: it answers after this call has returned.
            let control: any ResponseControl = exchange
            decisions.decide(names) { [self] in withExtendedLifetime(control) { streamDecided() } }
        }
    }

    override func trailers(_ fields: HTTP1Fields) {
        if heldHead != nil { heldTrailers = fields } else { next.trailers(fields) }
    }

    override func end(detail: String? = nil) {
        if let head = heldHead {
            endJSON(head)
        } else if waiting {
            endAfterDecisions = true
        } else {
            next.end(detail: detail)
        }
    }

    /// The PDP has answered on a stream's tools: the held events go out, filtered, and the
    /// upstream is read again (or its end, if it came meanwhile, is taken now).
    private func streamDecided() {
        waiting = false
        guard !exchange.isDone, relay != nil else { return }
        let output: [UInt8]
        do {
            output = try relay!.release()
        } catch {
            cut(error)
            return
        }
        if !output.isEmpty { next.body(ByteQueue(output).chunk) }
        guard !exchange.isDone else { return }
        if endAfterDecisions {
            endAfterDecisions = false
            next.end()
        } else {
            exchange.releaseUpstream()
        }
    }

    /// A held JSON answer: the PDP is asked about its tools before it goes out, filtered,
    /// with its new length.
    private func endJSON(_ head: HTTPResponseHead) {
        if let names = relay?.namesAwaitingDecisions(), let decisions = relay?.filter.decisions {
            let control: any ResponseControl = exchange
            decisions.decide(names) { [self] in
                guard !control.isDone, relay != nil else { return }
                endJSON(head)
            }
            return
        }
        let body: [UInt8]
        do {
            body = try relay!.endJSON()
        } catch {
            refuse(error)
            return
        }
        relay = nil
        heldHead = nil
        next.head(head, bodyLength: UInt64(body.count))
        if !body.isEmpty { next.body(ByteQueue(body).chunk) }
        guard !exchange.isDone else { return }
        if let trailers = heldTrailers { next.trailers(trailers) }
        next.end()
    }

    /// Nothing sent yet: a 502, and the upstream call abandoned.
    private func refuse(_ refusal: ToolListFilter.Refusal) {
        heldHead = nil
        relay = nil
        exchange.answerInstead(
            ErrorResponse.badGateway(
                "the upstream's tools/list answer could not be filtered", exchange.context.requestID,
                detail: "mcp tools/list: \(refusal)"), upstreamError: "tool_list_unfiltered")
    }

    /// The head is out: the only honest signal left is a cut connection, as when the
    /// upstream fails mid-response; the response event the client waits for never comes.
    private func cut(_ refusal: ToolListFilter.Refusal) {
        relay = nil
        exchange.cutAnswer(
            upstreamError: "tool_list_unfiltered", warning: "mcp tools/list answer cut",
            detail: "mcp tools/list: \(refusal)")
    }
}
