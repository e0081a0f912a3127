/// One request on an HTTP/2 connection (one stream, RFC 9113 §5) as the seam sees it: the
/// `ResponseTransport` its responder answers through (`+Response`) and the `RequestBody`
/// the gateway reads (`+Body`), framed and credited by the connection's
/// `HTTP2ConnectionHandler`. Holds the handler only while the stream is on it: once its
/// answer is written out, or the stream or the connection closes first, the stream is
/// detached and inert (`isConnected` false, every call a no-op). Loop-thread only.
final class HTTP2Stream: ResponseTransport, RequestBody {
    /// The request side, as the gateway sees it: the header block arriving, complete, then
    /// handed to the gateway (its exchange open until answered), or never started.
    enum RequestState: Equatable {
        /// The header block is still coming (HEADERS, CONTINUATION).
        case receivingHeaders
        /// The header block ended (END_HEADERS): the head waits for `start`.
        case headersComplete
        /// nghttp2 found a stream error (a frame the client sent) before the gateway started
        /// on it, and will reset it: the gateway never starts (MadeYouReset: no work for a
        /// stream about to end). `afterHeaders`: its header block had ended.
        case errored(afterHeaders: Bool)
        /// Started while its block still arrives, to be refused: past twice the header
        /// bounds its 431 goes first, and the rest of the block is decoded unread.
        case refusedMidBlock
        /// The head went to the gateway, and its answer is not yet complete: the connection
        /// counts the exchange (`exchangeEnded`), also past the stream's own end.
        case exchanging
        /// `start` ran and the gateway's part is over: answered, or refused by the engine
        /// (a malformed head, the exchange cap).
        case started

        /// The header block ended (until then its fields are the head's, and the header
        /// timeout holds it).
        var headersComplete: Bool {
            switch self {
            case .receivingHeaders, .refusedMidBlock, .errored(afterHeaders: false): false
            case .headersComplete, .errored(afterHeaders: true), .exchanging, .started: true
            }
        }

        /// `start` ran: body events go to the gateway's reader.
        var started: Bool {
            switch self {
            case .exchanging, .started, .refusedMidBlock: true
            case .receivingHeaders, .headersComplete, .errored: false
            }
        }

        /// END_HEADERS. true: the head is new (a later block is the trailer section).
        mutating func headerBlockEnded() -> Bool {
            switch self {
            case .receivingHeaders:
                self = .headersComplete
                return true
            case .refusedMidBlock:
                self = .started
            case .errored(afterHeaders: false):
                self = .errored(afterHeaders: true)
            case .headersComplete, .errored(afterHeaders: true), .exchanging, .started:
                break
            }
            return false
        }

        /// nghttp2 found a stream error: a stream not yet started never will be.
        mutating func streamError() {
            switch self {
            case .receivingHeaders: self = .errored(afterHeaders: false)
            case .headersComplete: self = .errored(afterHeaders: true)
            case .errored, .refusedMidBlock, .exchanging, .started: break
            }
        }

        /// The head's turn to go to the gateway. true: it goes (or the engine refuses it);
        /// false: it went already, or the stream errored. A block still arriving starts only
        /// to be refused (the header bomb).
        mutating func start() -> Bool {
            switch self {
            case .headersComplete: self = .started
            case .receivingHeaders: self = .refusedMidBlock
            case .errored, .refusedMidBlock, .exchanging, .started: return false
            }
            return true
        }

        /// The gateway took the head: its exchange is open.
        mutating func exchangeOpened() {
            if self == .started || self == .refusedMidBlock { self = .exchanging }
        }

        /// The gateway's answer is complete (or given up). true: it was open, once.
        mutating func exchangeEnded() -> Bool {
            guard self == .exchanging else { return false }
            self = .started
            return true
        }
    }

    enum ResponseState: Equatable {
        case waiting
        /// Head submitted; body bytes go through `output`. `remaining`: what the announced
        /// content-length still allows (nil: not announced).
        case streaming(remaining: UInt64?)
        /// The answer's end is submitted (or a reset): nghttp2 frames what is left.
        case ended
        /// The frame with END_STREAM went into the connection's output (`flushMark` set).
        case handedOff
    }

    let id: Int32
    /// nil once detached.
    var handler: HTTP2ConnectionHandler?
    /// The connection, for as long as the gateway's exchange on this stream is open: it
    /// counts them (`exchangeEnded`), also past the stream's own end.
    private weak var owner: HTTP2ConnectionHandler?
    var headers: HTTP2RequestHeaders
    var responder: Responder?
    var isHEAD = false
    var contentLength: UInt64?
    var expectsContinueField = false

    // Request side.
    var request = RequestState.receivingHeaders
    /// Body bytes received and not yet handed on: not yet credited to the client's flow
    /// control window, so the window bounds them.
    let received = ByteQueue()
    /// The request body's reader: who takes it, what came, its limits, its pace. Its end
    /// (`complete`) is the client's END_STREAM: every body byte is in `received` or handed on.
    var body = RequestBodyReader()
    /// Monotonic seconds: when the header block began, and when a body byte last came.
    var headersStartedAt = 0.0
    var lastBodyAt = 0.0
    /// The request's trailer section, and its bytes, bounded like HTTP/1.1's.
    var requestTrailers = HTTP1Fields()
    var trailerBytes = 0

    // Response side.
    var response = ResponseState.waiting
    /// Response body bytes not yet framed (the data provider takes from here).
    let output = ByteQueue()
    /// A trailer section to send after the body's last DATA frame (gRPC's status).
    var trailers: HTTP1Fields?
    /// A bodiless streamed answer's head, sent with its end (`endResponse`).
    var heldHead: HTTP2ResponseFields?
    /// Monotonic seconds: when body bytes last left `output` for a frame, or came into an
    /// empty one (a client that grants no window is timed out on it).
    var lastSentAt = 0.0
    /// Connection bytes written when the answer's last byte is out.
    var flushMark: UInt64 = 0
    var drainedActions: [() -> Void] = []
    /// nghttp2 closed the stream (either side's END_STREAM, or a reset).
    var closed = false

    var headersComplete: Bool { request.headersComplete }
    var started: Bool { request.started }
    /// The answer's end is queued in `output`: once it is framed, the data provider says EOF.
    var outputEnded: Bool { response == .ended || response == .handedOff }

    init(id: Int32, handler: HTTP2ConnectionHandler, limits: HTTP1Limits) {
        self.id = id
        self.handler = handler
        owner = handler
        headers = HTTP2RequestHeaders(limits: limits)
    }

    // MARK: ResponseTransport

    var isConnected: Bool { handler.map { !closed && $0.isOpen } ?? false }
    var pendingOutput: Int { output.count + (handler?.pendingOutput ?? 0) }
    /// Up to 128 streams share a connection: each holds at most 64 KiB of answer its client
    /// has not taken, so a client that grants no window makes the gateway hold at most
    /// 8 MiB per connection for it, not 32.
    var highWater: Int { 64 << 10 }
    func attach(_ responder: Responder) { self.responder = responder }

    /// The client is gone and `transportClosed` was reported; the gateway has now answered.
    func discardResponse() { endExchange() }
    /// No HTTP/1.1 upgrade on HTTP/2 (RFC 9113 §8.6), and extended CONNECT (RFC 8441) is
    /// not offered.
    func switchProtocols(_ head: HTTPResponseHead) -> TunnelEndpoint? { nil }

    func whenDrained(_ action: @escaping () -> Void) {
        guard handler != nil else { return }
        if output.count == 0 && (handler?.pendingOutput ?? 0) <= HTTP2ConnectionHandler.outputLowWater {
            action()
        } else {
            drainedActions.append(action)
        }
    }

    // MARK: RequestBody

    var framing: RequestBodyFraming {
        if body.complete && body.bytes == 0 && received.count == 0 { return .none }
        if let contentLength { return contentLength == 0 ? .none : .length(contentLength) }
        return .streamed
    }

    var expectsContinue: Bool {
        expectsContinueField && !body.continueSent && !body.complete && response == .waiting
    }

    // MARK: from the handler

    /// The answer's last byte is written: report it and let go of the handler.
    func flushed() {
        handler = nil
        drainedActions = []
        responder.take()?.transportFlushed()
        endExchange()
    }

    /// The stream or the connection closed before the answer was written out.
    func gone() {
        handler = nil
        drainedActions = []
        let r = responder.take()
        r?.transportClosed()
        // The gateway may still be at work on it (an upstream call, an introspection): it
        // counts until its answer (`discardResponse`).
        if r == nil || r?.state == .answered { endExchange() }
    }

    private func endExchange() {
        guard request.exchangeEnded() else { return }
        owner?.exchangeEnded()
    }
}
