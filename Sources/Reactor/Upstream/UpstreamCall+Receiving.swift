/// Reading the response: the strict parser's head and body events handed to the delegate,
/// a 101 hand-over, the end of the stream, and a reused connection lost before any byte
/// (retried once on a fresh one when the request is bodiless and idempotent).
extension UpstreamCall {
    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool) {
        guard machine.isExchanging else { return }
        if timedOut {
            finish(.responseTimeout)
            return
        }
        let outcome = transport.fill()
        if case .bytes = outcome { machine.bytesReceived() }
        consumeInput(transport)
        guard machine.readsResponse else { return }
        switch outcome {
        case .eof: endOfStream()
        case .failed: connectionLost()
        case .bytes, .wouldBlock: break
        }
    }

    /// Feeds the input to the parser, one event at a time, until it needs more bytes, the
    /// delegate pauses, or the exchange ends.
    func consumeInput(_ transport: UpstreamTransport) {
        let input = transport.input
        // One reference to the connection for the whole loop, and an identity check per
        // turn: binding it anew each turn was an atomic retain and release per event (a
        // head, a body, its end). The call lets go of it (`finish`) when it is done with it.
        guard let conn = connection else { return }
        while machine.readsResponse && connection === conn {
            let bytes = input.front
            var consumed = 0
            let next: HTTP1ResponseParser.Event?
            do throws(HTTP1ParseError) {
                next = try conn.parser.next(bytes, consumed: &consumed)
            } catch {
                finish(.invalidResponse)
                return
            }
            guard let event = consume next else {
                if consumed == 0 { return }
                input.drain(consumed)
                continue
            }
            switch consume event {
            case .informational(let head):
                input.drain(consumed)
                if head.status != 100 {
                    delegate?.upstreamInterim(responseHead(head))
                } else if awaitingContinue {
                    // The answer to the head's Expect. Any other 100 answers nothing: dropped.
                    proceedWithBody()
                }
            case .head(let head):
                input.drain(consumed)
                received(head)
            case .body(let range):
                // Framing before the data (a chunk line) is dropped; then the data is handed
                // over in place, and the delegate moves exactly `range.count` bytes.
                input.drain(range.lowerBound)
                let before = input.count
                delegate?.upstreamBody(BodyChunk(queue: input, count: range.count))
                let unmoved = input.count + range.count - before
                if unmoved > 0 { input.drain(unmoved) }
                input.drain(consumed - range.upperBound)
            case .end:
                input.drain(consumed)
                complete(transport)
            }
        }
    }

    func received(_ head: consuming HTTP1ResponseHead) {
        if head.status == 101 {
            // To a request without Upgrade a 101 is a protocol error, and the bytes after it
            // are not HTTP.
            if let conn = connection, machine.switchingProtocols(upgradeRequested: request.upgrade) {
                switchedProtocols(head, conn)
            } else {
                finish(.invalidResponse)
            }
            return
        }
        pool.answersHTTP10 = head.version == .http10
        let action = machine.headReceived(keepAlive: head.keepAlive)
        if action.stopSending {
            // RFC 9112 §9.3: the upstream answered before reading the whole request. Stop
            // sending; the connection is closed after the response.
            abandonBody()
            if let transport {
                transport.disarmWrite()
                transport.output.drain(transport.pendingOutput)
            }
        }
        if action.armRead { armRead() }
        delegate?.upstreamHead(responseHead(head))
    }

    /// The 101 (the machine has ended the call): the connection leaves the pool for the
    /// tunnel.
    func switchedProtocols(_ head: HTTP1ResponseHead, _ conn: UpstreamConnection) {
        connection = nil
        conn.served += 1
        pool.detach(conn)
        let endpoint = UpstreamTunnelEndpoint(connection: conn)
        let delegate = self.delegate.take()
        body = nil
        if let delegate { delegate.upstreamSwitchedProtocols(responseHead(head), endpoint) } else { endpoint.close() }
        selfRetain = nil
    }

    func complete(_ transport: UpstreamTransport) {
        let reuse = machine.responseEnded(inputEmpty: transport.input.count == 0)
        finish(nil, reusable: reuse == .pool)
    }

    /// The upstream closed the connection: the end of a close-delimited body, or a failure.
    func endOfStream() {
        do throws(HTTP1ParseError) {
            if case .end? = try connection?.parser.finish() {
                finish(nil)
            } else {
                connectionLost()
            }
        } catch {
            connectionLost()
        }
    }

    func connectionLost() {
        if let conn = connection,
            machine.connectionLost(mayGoAgain: conn.served > 0 && body == nil && request.method.isIdempotent)
                == .retry
        {
            // A stale keep-alive connection: the upstream closed it while it was idle.
            connection = nil
            pool.release(conn, reusable: false)
            attempt(fresh: true)
            return
        }
        finish(.connectionFailed)
    }
}

/// The gateway's view of a parsed upstream head (its fields keep the head's one buffer).
/// The reason phrase only when it is not the standard one for the status (no string for the
/// usual "OK"), and the body's length when the framing says it.
func responseHead(_ head: consuming HTTP1ResponseHead) -> HTTPResponseHead {
    // The head's fields are read last, so the buffer moves over instead of being shared.
    var bodyLength: UInt64?
    if case .contentLength(let n) = head.framing { bodyLength = n }
    let listsConnectionOptions = head.listsConnectionOptions
    return HTTPResponseHead(
        status: head.status, reason: head.nonstandardReason, fields: head.fields, bodyLength: bodyLength,
        listsConnectionOptions: listsConnectionOptions)
}
