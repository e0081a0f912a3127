import Reactor

/// A `tools/list` answer on its way through the proxy (ToolListRelay says what is done to it):
/// the upstream is asked for an uncoded body, a JSON answer is held and sent filtered with its
/// new length, an SSE answer streams with its response event rewritten. What cannot be
/// filtered is refused: a 502 while nothing has been sent, else a cut connection. Only
/// requests whose context carries a `toolListFilter` come here.
extension ProxyExchange {
    /// RFC 9110 §12.5.3: "If no Accept-Encoding header field is in the request, any content
    /// coding is considered acceptable", so the client's is replaced by `identity` rather than
    /// dropped: the gateway must read the answer to filter it.
    static func askForIdentity(_ request: inout UpstreamCall.Request) {
        var doomed: [Int] = []
        request.forwarded?.forEachValue(named: "Accept-Encoding") { index, _ in doomed.append(index) }
        for index in doomed { request.forwarded?.drop(index) }
        request.fields.append("Accept-Encoding", "identity")
    }

    func toolListHead(_ head: HTTPResponseHead) {
        let mode: ToolListRelay.Mode
        do {
            mode = try ToolListRelay.mode(status: head.status, fields: head.fields)
        } catch {
            refuseToolList(error)
            return
        }
        if mode != .untouched {
            // The answer is this caller's (cacheScope "private" in it): no shared cache may
            // keep it, whatever the server said.
            context.droppedResponseHeaders.append("Cache-Control")
            context.responseHeaders.append(("Cache-Control", "private, no-store"))
        }
        switch mode {
        case .untouched:
            toolList = nil
            sendHead(head, bodyLength: head.bodyLength)
        case .json:
            heldHead = head
        case .eventStream:
            // The rewritten event changes the body's length: chunked (or close-delimited), so
            // an upstream Content-Length cannot frame it.
            context.droppedResponseHeaders.append("Content-Length")
            sendHead(head, bodyLength: nil)
        }
    }

    func toolListBody(_ chunk: BodyChunk) {
        let input = chunk.take()
        if heldHead != nil {
            do {
                try toolList!.hold(input)
            } catch {
                refuseToolList(error)
            }
            return
        }
        let output: [UInt8]
        do {
            output = try toolList!.stream(input)
        } catch {
            cutToolList(error)
            return
        }
        if !output.isEmpty { send(OwnedBuffer(output).chunk) }
        if !toolListWaiting, let names = toolList?.awaiting, let decisions = toolList?.filter.decisions {
            // The response event waits for the PDP: the upstream too, until it has answered.
            toolListWaiting = true
            call?.pause()
            decisions.decide(names) { [self] in streamDecided() }
        }
    }

    /// The PDP has answered on a stream's tools: the held events go out, filtered, and the
    /// upstream is read again (or its end, if it came meanwhile, is taken now).
    private func streamDecided() {
        toolListWaiting = false
        guard !done, toolList != nil else { return }
        let output: [UInt8]
        do {
            output = try toolList!.release()
        } catch {
            cutToolList(error)
            return
        }
        if !output.isEmpty { send(OwnedBuffer(output).chunk) }
        if completeAfterDecisions {
            completeAfterDecisions = false
            upstreamComplete()
        } else if !paused {
            call?.resume()
        }
    }

    func toolListComplete(_ head: HTTPResponseHead) {
        if let names = toolList?.namesAwaitingDecisions(), let decisions = toolList?.filter.decisions {
            // A held JSON answer: the PDP is asked about its tools before it goes out.
            decisions.decide(names) { [self] in
                guard !done, toolList != nil else { return }
                toolListComplete(head)
            }
            return
        }
        let body: [UInt8]
        do {
            body = try toolList!.endJSON()
        } catch {
            refuseToolList(error)
            return
        }
        toolList = nil
        sendHead(head, bodyLength: UInt64(body.count))
        if !body.isEmpty { send(OwnedBuffer(body).chunk) }
        let responder = self.responder
        finish(status: status)
        responder.finish()
    }

    /// Nothing sent yet: a 502, and the upstream call abandoned.
    private func refuseToolList(_ refusal: ToolListFilter.Refusal) {
        heldHead = nil
        toolList = nil
        refuseHeldAnswer(
            metric: "tool_list_unfiltered", description: "the upstream's tools/list answer could not be filtered",
            detail: "mcp tools/list: \(refusal)")
    }

    /// The head is out: the only honest signal left is a cut connection, as when the
    /// upstream fails mid-response; the response event the client waits for never comes.
    private func cutToolList(_ refusal: ToolListFilter.Refusal) {
        toolList = nil
        abandonCall()
        services.metrics.upstreamError("tool_list_unfiltered")
        services.log.warning(
            "mcp tools/list answer cut", metadata: ["request_id": "\(context.requestID)", "reason": "\(refusal)"])
        responder.abort()
        finish(status: 502, detail: "mcp tools/list: \(refusal)")
    }

}
