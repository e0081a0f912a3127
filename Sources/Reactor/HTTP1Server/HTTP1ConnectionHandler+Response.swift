/// Responses: framed for the client (Content-Length when known, chunked to HTTP/1.1, else
/// close-delimited to HTTP/1.0; no body bytes for HEAD, 204 and 304, RFC 9112 §6.3) and
/// queued in the connection's output. A whole response goes out in one writev; a streamed
/// one is flushed at the end of the loop turn, so its head leaves with its first chunk.
extension HTTP1ConnectionHandler {
    func sendResponse(_ ex: HTTP1ServerExchange, _ head: HTTPResponseHead, body: [UInt8], close: Bool) {
        thread.check()
        guard case .waiting = ex.response else { return }
        decidePersistence(ex, close: close)
        let noBody = Self.hasNoBody(ex, head.status)
        let length: UInt64? =
            if head.status == 204 {
                nil
            } else if noBody {
                HTTP1ResponseEncoder.contentLength(head) ?? (body.isEmpty ? nil : UInt64(body.count))
            } else {
                UInt64(body.count)
            }
        appendHead(ex, head, contentLength: length, chunked: false)
        if !noBody { connection.output.append(body) }
        handOff(ex)
    }

    func sendInterim(_ ex: HTTP1ServerExchange, _ head: HTTPResponseHead) {
        thread.check()
        // RFC 9110 §15.2: "A server MUST NOT send a 1xx response to an HTTP/1.0 client."
        guard case .waiting = ex.response, ex.request.version == .http11 else { return }
        if head.status == 100 {
            guard !ex.body.continueSent else { return }
            ex.body.continueSent = true
        }
        let bytes = HTTP1ResponseEncoder.interim(head)
        connection.output.append(bytes)
        connection.scheduleFlush()
    }

    func startResponse(_ ex: HTTP1ServerExchange, _ head: HTTPResponseHead, close: Bool) {
        thread.check()
        guard case .waiting = ex.response else { return }
        let framing: HTTP1ServerExchange.ResponseFraming
        var length: UInt64?
        if Self.hasNoBody(ex, head.status) {
            framing = .none
            length = head.status == 204 ? nil : HTTP1ResponseEncoder.contentLength(head)
        } else if let given = head.bodyLength ?? HTTP1ResponseEncoder.contentLength(head) {
            framing = .length(remaining: given)
            length = given
        } else if ex.request.version == .http11 {
            framing = .chunked
        } else {
            framing = .untilClose
            ex.closeAfter = true
        }
        decidePersistence(ex, close: close)
        appendHead(ex, head, contentLength: length, chunked: framing.isChunked)
        ex.response = .streaming(framing)
        connection.scheduleFlush()
    }

    func sendBody(_ ex: HTTP1ServerExchange, _ chunk: BodyChunk) {
        thread.check()
        guard case .streaming(let framing) = ex.response else {
            chunk.drop()
            return
        }
        let output = connection.output
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
            ex.response = .streaming(.length(remaining: remaining - UInt64(n)))
        case .untilClose:
            chunk.move(to: output)
        }
        connection.scheduleFlush()
    }

    func endResponse(_ ex: HTTP1ServerExchange) {
        thread.check()
        guard case .streaming(let framing) = ex.response else { return }
        switch framing {
        case .chunked:
            connection.output.append("0\r\n\r\n")
        case .length(let remaining) where remaining > 0:
            // Shorter than announced: only a close tells the client the body is truncated.
            ex.closeAfter = true
        default:
            break
        }
        handOff(ex)
    }

    /// Cuts the connection (the client can tell a streamed body was truncated); the
    /// responder hears `transportClosed`.
    func abort(_ ex: HTTP1ServerExchange) {
        thread.check()
        connection.close()
    }

    /// Answers a request the parser refused (or a head that came too late) and closes. The
    /// gateway never sees such a request.
    func refuse(status: Int, description: String) {
        let (head, body) = Self.refusal(status: status, description: description)
        HTTP1ResponseEncoder.appendHead(
            head, contentLength: UInt64(body.count),
            chunked: false, persistence: .close, date: context.dates.fieldLine, to: connection.output)
        connection.output.append(body)
        closeAfterOutput()
    }

    /// The answer to a request the engine refuses itself, whatever the protocol: a JSON
    /// body with a fixed phrase (what is wrong, never the bytes that were).
    static func refusal(status: Int, description: String) -> (HTTPResponseHead, [UInt8]) {
        var fields = HTTP1Fields()
        fields.append("Content-Type", "application/json")
        let body = Array("{\"error\":\"invalid_request\",\"error_description\":\"\(description)\"}".utf8)
        return (HTTPResponseHead(status: status, fields: fields), body)
    }

    /// Every byte of the answer is in the output: note where it ends, write, move on.
    private func handOff(_ ex: HTTP1ServerExchange) {
        ex.response = .handedOff
        ex.flushMark = connection.bytesWritten + UInt64(pendingOutput)
        unflushed.append(ex)
        if !ex.body.complete, !ex.closeAfter {
            switch ex.body.consumer {
            case .discarding: break
            case .finished: ex.closeAfter = true
            case .unclaimed, .collecting, .streaming: startDiscarding(ex)
            }
        }
        connection.flush()
        drive()
    }

    /// Whether the connection stays open after this answer (RFC 9112 §9.3, §9.6).
    private func decidePersistence(_ ex: HTTP1ServerExchange, close: Bool) {
        if close || !ex.request.keepAlive { ex.closeAfter = true }
        guard !ex.closeAfter, !ex.body.complete else { return }
        switch ex.body.consumer {
        case .finished:
            // The body failed part-way: what follows it cannot be trusted.
            ex.closeAfter = true
        case .unclaimed:
            if ex.request.expectsContinue && !ex.body.continueSent { ex.closeAfter = true }
            if case .contentLength(let n) = ex.request.framing, n > UInt64(Self.discardLimit) { ex.closeAfter = true }
        case .collecting, .streaming, .discarding:
            break
        }
    }

    /// Writes the head into the connection's output.
    private func appendHead(
        _ ex: HTTP1ServerExchange, _ head: HTTPResponseHead, contentLength: UInt64?,
        chunked: Bool
    ) {
        let persistence: HTTP1ResponseEncoder.Persistence =
            ex.closeAfter ? .close : ex.request.version == .http10 ? .keepAlive : .keepAliveDefault
        HTTP1ResponseEncoder.appendHead(
            head, contentLength: contentLength, chunked: chunked,
            persistence: persistence, date: context.dates.fieldLine, to: connection.output)
    }

    /// RFC 9112 §6.3 rule 1: no content after HEAD, 1xx, 204, 304.
    private static func hasNoBody(_ ex: HTTP1ServerExchange, _ status: Int) -> Bool {
        ex.isHEAD || status == 204 || status == 304 || (100..<200).contains(status)
    }
}

extension HTTP1ServerExchange.ResponseFraming {
    var isChunked: Bool { if case .chunked = self { true } else { false } }
}
