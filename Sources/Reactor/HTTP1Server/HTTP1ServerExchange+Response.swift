/// Responses: framed for the client (Content-Length when known, chunked to HTTP/1.1, else
/// close-delimited to HTTP/1.0; no body bytes for HEAD, 204 and 304, RFC 9112 §6.3) and
/// queued in the connection's output. A whole response goes out in one writev; a streamed
/// one is flushed at the end of the loop turn, so its head leaves with its first chunk.
/// Each call acts only while this exchange is its connection's current one (`active`): an
/// answer from a responder whose exchange has moved on goes nowhere.
extension HTTP1ServerExchange {
    func sendResponse(_ head: HTTPResponseHead, body: [UInt8], close: Bool) {
        guard let handler = active, case .waiting = response else { return }
        handler.thread.check()
        decidePersistence(close: close)
        let noBody = hasNoBody(head.status)
        let length: UInt64? =
            if head.status == 204 {
                nil
            } else if noBody {
                HTTP1ResponseEncoder.contentLength(head) ?? (body.isEmpty ? nil : UInt64(body.count))
            } else {
                UInt64(body.count)
            }
        appendHead(head, contentLength: length, chunked: false, on: handler)
        if !noBody { handler.connection.output.append(body) }
        handOff(to: handler)
    }

    func sendInterim(_ head: HTTPResponseHead) {
        // RFC 9110 §15.2: "A server MUST NOT send a 1xx response to an HTTP/1.0 client."
        guard let handler = active, case .waiting = response, request.version == .http11 else { return }
        handler.thread.check()
        if head.status == 100 {
            guard !body.continueSent else { return }
            body.continueSent = true
        }
        let bytes = HTTP1ResponseEncoder.interim(head)
        handler.connection.output.append(bytes)
        handler.connection.scheduleFlush()
    }

    func startResponse(_ head: HTTPResponseHead, close: Bool) {
        guard let handler = active, case .waiting = response else { return }
        handler.thread.check()
        let framing: ResponseFraming
        var length: UInt64?
        if hasNoBody(head.status) {
            framing = .none
            length = head.status == 204 ? nil : HTTP1ResponseEncoder.contentLength(head)
        } else if let given = head.bodyLength ?? HTTP1ResponseEncoder.contentLength(head) {
            framing = .length(remaining: given)
            length = given
        } else if request.version == .http11 {
            framing = .chunked
        } else {
            framing = .untilClose
            closeAfter = true
        }
        decidePersistence(close: close)
        appendHead(head, contentLength: length, chunked: framing.isChunked, on: handler)
        response = .streaming(framing)
        handler.connection.scheduleFlush()
    }

    func sendBody(_ chunk: BodyChunk) {
        guard let handler = active, case .streaming(let framing) = response else { return chunk.drop() }
        handler.thread.check()
        let output = handler.connection.output
        switch framing {
        case .none:
            chunk.drop()
        case .chunked:
            guard chunk.count > 0 else { return }
            let line = HTTP1ResponseEncoder.chunkLine(chunk.count)
            output.append(line)
            chunk.move(to: output)
            output.append("\r\n")
        case .length(let remaining):
            // Bytes past the announced length would be read as the next response: dropped.
            let n = Int(min(UInt64(chunk.count), remaining))
            BodyChunk(queue: chunk.queue, count: n).move(to: output)
            if chunk.count > n { chunk.queue.drain(chunk.count - n) }
            response = .streaming(.length(remaining: remaining - UInt64(n)))
        case .untilClose:
            chunk.move(to: output)
        }
        handler.connection.scheduleFlush()
    }

    func endResponse() {
        guard let handler = active, case .streaming(let framing) = response else { return }
        handler.thread.check()
        switch framing {
        case .chunked:
            handler.connection.output.append("0\r\n\r\n")
        case .length(let remaining) where remaining > 0:
            // Shorter than announced: only a close tells the client the body is truncated.
            closeAfter = true
        default:
            break
        }
        handOff(to: handler)
    }

    /// Cuts the connection (the client can tell a streamed body was truncated); the
    /// responder hears `transportClosed`.
    func abortResponse() {
        guard let handler else { return }
        handler.thread.check()
        handler.connection.close()
    }

    /// Every byte of the answer is in the output: note where it ends, write, move on.
    private func handOff(to handler: HTTP1ConnectionHandler) {
        response = .handedOff
        flushMark = handler.connection.bytesWritten + UInt64(handler.pendingOutput)
        handler.unflushed.append(self)
        if !body.complete, !closeAfter {
            switch body.consumer {
            case .discarding: break
            case .finished: closeAfter = true
            case .unclaimed, .collecting, .streaming: handler.startDiscarding(self)
            }
        }
        handler.connection.flush()
        handler.drive()
    }

    /// Whether the connection stays open after this answer (RFC 9112 §9.3, §9.6).
    private func decidePersistence(close: Bool) {
        if close || !request.keepAlive { closeAfter = true }
        guard !closeAfter, !body.complete else { return }
        switch body.consumer {
        case .finished:
            // The body failed part-way: what follows it cannot be trusted.
            closeAfter = true
        case .unclaimed:
            if request.expectsContinue && !body.continueSent { closeAfter = true }
            if case .contentLength(let n) = request.framing, n > UInt64(HTTP1ConnectionHandler.discardLimit) {
                closeAfter = true
            }
        case .collecting, .streaming, .discarding:
            break
        }
    }

    /// Writes the head into the connection's output.
    private func appendHead(
        _ head: HTTPResponseHead, contentLength: UInt64?, chunked: Bool, on handler: HTTP1ConnectionHandler
    ) {
        let persistence: HTTP1ResponseEncoder.Persistence =
            closeAfter ? .close : request.version == .http10 ? .keepAlive : .keepAliveDefault
        HTTP1ResponseEncoder.appendHead(
            head, contentLength: contentLength, chunked: chunked,
            persistence: persistence, date: handler.context.dates.fieldLine, to: handler.connection.output)
    }

    /// RFC 9112 §6.3 rule 1: no content after HEAD, 1xx, 204, 304.
    private func hasNoBody(_ status: Int) -> Bool {
        isHEAD || status == 204 || status == 304 || (100..<200).contains(status)
    }
}

extension HTTP1ServerExchange.ResponseFraming {
    var isChunked: Bool { if case .chunked = self { true } else { false } }
}
