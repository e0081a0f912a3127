/// An exchange with no socket behind it: the request is given as values, and the answer is
/// recorded. For unit tests of the layers above (a gateway `Worker` judged without a
/// network), and for fuzzing them. Loop-thread only, like a real transport; it needs no loop.
public final class InMemoryTransport: ResponseTransport, RequestBody {
    /// What the responder sent.
    public private(set) var head: HTTPResponseHead?
    public private(set) var interim: [HTTPResponseHead] = []
    public private(set) var body: [UInt8] = []
    public private(set) var closeAfter = false
    public private(set) var ended = false
    public private(set) var aborted = false
    public private(set) var bodyRead = false
    /// The request carried `Expect: 100-continue` (HTTP/1.1, with a body): a 100 is owed
    /// before the body is read, and is recorded in `interim` when sent.
    public private(set) var askedContinue = false
    public private(set) var continueSent = false
    public var isConnected = true
    public var pendingOutput = 0
    private var responder: Responder?
    private var requestBody: BufferedRequestBody?

    /// An exchange for `method target` with `fields` and `body`, and the transport that
    /// records its answer.
    public static func exchange(
        _ methodName: String, _ target: String, fields: [(name: String, value: String)] = [],
        body: [UInt8]? = nil, peer: String = "127.0.0.1", isTLS: Bool = false,
        connection: ClientConnection? = nil, version: (major: Int, minor: Int) = (1, 1)
    ) -> (ServerExchange, InMemoryTransport) {
        let t = InMemoryTransport()
        t.requestBody = body.map(BufferedRequestBody.init)
        let head = HTTPRequestHead(
            methodName: methodName, target: target, version: version, fields: HTTP1Fields(fields))
        // As the HTTP/1.1 engine decides it: only an HTTP/1.1 request's Expect counts (RFC 9110 §10.1.1).
        t.askedContinue =
            version >= (1, 1) && body?.isEmpty == false
            && fields.contains { $0.name.lowercased() == "expect" && $0.value.lowercased() == "100-continue" }
        let exchange = ServerExchange(
            head: head, connection: connection ?? ClientConnection(peer: peer, isTLS: isTLS),
            body: t, transport: t)
        return (exchange, t)
    }

    /// The answer's status, 0 while there is none.
    public var status: Int { head?.status ?? 0 }
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The client goes away.
    public func disconnect() {
        guard isConnected else { return }
        isConnected = false
        let r = responder
        responder = nil
        r?.transportClosed()
    }

    // MARK: ResponseTransport

    public func attach(_ responder: Responder) { self.responder = responder }

    public func sendResponse(_ head: HTTPResponseHead, body: [UInt8], close: Bool) {
        self.head = head.flattened
        self.body = body
        closeAfter = close
        ended = true
        flushed()
    }

    public func sendInterim(_ head: HTTPResponseHead) {
        // The engine's rule: one 100 at most.
        if head.status == 100 {
            guard !continueSent else { return }
            continueSent = true
        }
        interim.append(head)
    }

    public func startResponse(_ head: HTTPResponseHead, close: Bool) {
        self.head = head.flattened
        closeAfter = close
    }

    public func sendBody(_ chunk: BodyChunk) { body += chunk.take() }
    /// The trailer section of a streamed answer, if one was sent.
    public var trailers = HTTP1Fields()
    public func sendTrailers(_ fields: HTTP1Fields) { trailers = fields }

    public func endResponse() {
        ended = true
        flushed()
    }

    public func abortResponse() {
        aborted = true
        isConnected = false
        let r = responder
        responder = nil
        r?.transportClosed()
    }

    public func discardResponse() {}

    public func whenDrained(_ action: @escaping () -> Void) { action() }

    /// The client's side after a 101, once `switchProtocols` handed it over.
    public private(set) var tunnelEndpoint: InMemoryTunnelEndpoint?

    public func switchProtocols(_ head: HTTPResponseHead) -> TunnelEndpoint? {
        self.head = head.flattened
        ended = true
        let endpoint = InMemoryTunnelEndpoint()
        tunnelEndpoint = endpoint
        responder = nil
        return endpoint
    }

    private func flushed() {
        let r = responder
        responder = nil
        r?.transportFlushed()
    }

    // MARK: RequestBody (a buffered body; `bodyRead` records that it was asked for)

    public var framing: RequestBodyFraming { requestBody?.framing ?? .none }

    public var expectsContinue: Bool { askedContinue && !continueSent && head == nil && !bodyRead }

    public func sendContinue() {
        guard expectsContinue else { return }
        sendInterim(HTTPResponseHead(status: 100))
    }

    public func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        sendContinue()
        bodyRead = true
        if let requestBody { requestBody.collect(limit: limit, done) } else { done(.success([])) }
    }

    public func stream(to sink: RequestBodySink) {
        sendContinue()
        bodyRead = true
        if let requestBody { requestBody.stream(to: sink) } else { sink.requestBodyEnd(trailers: HTTP1Fields()) }
    }

    public func pause() {}
    public func resume() {}
    public func discard() { requestBody?.discard() }
}
