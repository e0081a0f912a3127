/// The gateway of `HTTP2FuzzEntry`: answers each exchange as its stream id and the input's
/// flag byte pick, and checks every head it gets against what RFC 9113 §8.2 and the
/// server's limits allow.
extension HTTP2FuzzEntry {
    enum Answer: CaseIterable {
        /// Reads the whole body (at most 1 KiB), then 200 with a small body.
        case afterBody
        /// 200 at once, the body unread.
        case beforeBody
        /// A streamed 200 that echoes the body as it comes, ended with it.
        case streamed
        /// Not while the connection lasts, even once the client reset the stream (a gateway
        /// still at work on an upstream call): the exchange stays open until `endHeld`.
        case never
    }

    /// What the gateway saw of one request: the fields of the head, as the upstream would.
    struct Head: Equatable {
        var method: String
        var target: String
        var fields: [String]
    }

    /// Connection-specific fields (RFC 9113 §8.2.2), which no request may carry into the
    /// gateway; `te` may carry only "trailers".
    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"
    ]

    final class Gateway {
        let answers: UInt8
        /// Every stream gets `answers`' answer, instead of the next stream the next one.
        let sameAnswer: Bool
        let options: HTTPServerOptions
        let limits: HTTP1Limits
        /// Set once the connection is built (the handler needs the context this gateway is in).
        weak var handler: HTTP2ConnectionHandler?
        private(set) var heads: [UInt32: Head] = [:]
        private(set) var exchanges: [ServerExchange] = []
        /// The handler's count of open exchanges reached its maximum at some point.
        private(set) var reachedMaxExchanges = false

        init(answers: UInt8, sameAnswer: Bool, options: HTTPServerOptions, limits: HTTP1Limits) {
            self.answers = answers
            self.sameAnswer = sameAnswer
            self.options = options
            self.limits = limits
        }

        func exchange(_ exchange: ServerExchange, stream: UInt32) {
            check(exchange.head)
            fuzzInvariant(heads[stream] == nil, "gateway: stream \(stream) came twice")
            heads[stream] = Head(
                method: exchange.head.methodName, target: exchange.head.target,
                fields: exchange.head.fields.map { "\($0.name.lowercased()): \($0.value)" })
            if let handler {
                fuzzInvariant(
                    handler.exchangesOpen <= HTTP2ConnectionHandler.maxExchanges,
                    "gateway: \(handler.exchangesOpen) exchanges open, past \(HTTP2ConnectionHandler.maxExchanges)")
                if handler.exchangesOpen >= HTTP2ConnectionHandler.maxExchanges { reachedMaxExchanges = true }
            }
            exchanges.append(exchange)
            let all = Answer.allCases
            let answer = all[(Int(answers) + (sameAnswer ? 0 : Int(stream >> 1))) % all.count]
            if answer != .never { exchange.observer = AbortWhenClientGone() }
            switch answer {
            case .afterBody:
                exchange.body.collect(limit: 1024) { [weak exchange] result in
                    guard let exchange, exchange.state == .waiting else { return }
                    switch result {
                    case .success(let body): exchange.respond(status: 200, body: Array("read \(body.count)\n".utf8))
                    case .failure: exchange.respond(status: 400, body: Array("refused\n".utf8))
                    }
                }
            case .beforeBody:
                exchange.respond(status: 200, body: Array("early\n".utf8))
            case .streamed:
                exchange.startStreaming(status: 200)
                exchange.body.stream(to: EchoSink(exchange, limits: limits))
            case .never:
                break
            }
        }

        /// RFC 9113 §8.2.2's connection-specific fields are gone, and the head is within
        /// `max_header_size` and the field count (counted as on HTTP/1.1, name: value CRLF).
        private func check(_ head: HTTPRequestHead) {
            fuzzInvariant(!head.methodName.isEmpty, "gateway: a head without a method")
            fuzzInvariant(head.fields.first("host") != nil, "gateway: a head without a Host")
            var bytes = 0
            for field in head.fields {
                let name = field.name.lowercased()
                fuzzInvariant(!connectionSpecific.contains(name), "gateway: a connection-specific field \(name)")
                fuzzInvariant(
                    name != "te" || field.value.lowercased() == "trailers", "gateway: te other than trailers")
                fuzzInvariant(!name.hasPrefix(":"), "gateway: a pseudo-header \(name) among the fields")
                bytes += field.nameBytes.count + field.valueBytes.count + 4
            }
            fuzzInvariant(
                bytes <= options.maxHeaderSize, "gateway: \(bytes) bytes of fields, past \(options.maxHeaderSize)")
            fuzzInvariant(head.fields.count <= limits.maxHeaderCount, "gateway: \(head.fields.count) fields")
        }

        /// After the connection closed: the held exchanges end, then every exchange was
        /// answered and none is counted open.
        func endHeld() {
            for exchange in exchanges where exchange.state != .answered { exchange.abort() }
            if let handler { fuzzInvariant(handler.exchangesOpen == 0, "gateway: exchanges still counted open") }
        }
    }

    /// Ends an answer whose client is gone, as the gateway's producers do.
    final class AbortWhenClientGone: ResponderObserver {
        func completed(_ responder: Responder, flushed: Bool) {}
        func clientGone(_ responder: Responder) { responder.abort() }
    }

    /// Echoes a request body into the streamed answer, and checks its trailer section.
    final class EchoSink: RequestBodySink {
        private weak var exchange: ServerExchange?
        private let limits: HTTP1Limits

        init(_ exchange: ServerExchange, limits: HTTP1Limits) {
            self.exchange = exchange
            self.limits = limits
        }

        func requestBody(_ chunk: BodyChunk) {
            guard let exchange, exchange.state == .streaming else { return chunk.drop() }
            exchange.write(chunk)
        }

        func requestBodyEnd(trailers: HTTP1Fields) {
            check(trailers)
            guard let exchange, exchange.state == .streaming else { return }
            exchange.finish()
        }

        func requestBodyFailed(_ failure: RequestBodyFailure) { exchange?.abort() }

        /// A trailer section (RFC 9113 §8.1) has no pseudo-header, no connection-specific
        /// field and none that frames or routes the message (RFC 9110 §6.5.1), and fits the
        /// trailer bounds.
        private func check(_ trailers: HTTP1Fields) {
            var bytes = 0
            for field in trailers {
                let name = field.name.lowercased()
                fuzzInvariant(!name.hasPrefix(":"), "trailers: a pseudo-header \(name)")
                fuzzInvariant(
                    !connectionSpecific.contains(name) && name != "te", "trailers: a connection-specific field \(name)")
                fuzzInvariant(!["content-length", "host"].contains(name), "trailers: a framing field \(name)")
                bytes += field.nameBytes.count + field.valueBytes.count + 4
            }
            fuzzInvariant(bytes <= limits.maxTrailerBytes, "trailers: \(bytes) bytes, past \(limits.maxTrailerBytes)")
            fuzzInvariant(trailers.count <= limits.maxHeaderCount, "trailers: \(trailers.count) fields")
        }
    }
}
