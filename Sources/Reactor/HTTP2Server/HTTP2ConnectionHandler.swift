internal import CNghttp2
import Glibc

/// HTTP/2 (RFC 9113) on one client connection: nghttp2's memory API over the engine's own
/// socket and TLS I/O, one `HTTP2Stream` (a `ServerExchange` to the gateway) per request.
/// `drive()` feeds the connection's input to `nghttp2_session_mem_recv`, hands what the
/// callbacks recorded to the gateway, and moves what `nghttp2_session_mem_send` frames into
/// the connection's output, at most `outputHighWater` at a time (a client that does not read
/// stops being read). Request bodies (`+Body`) are credited to the client's flow-control
/// windows only as the gateway takes them; responses (`+Response`) are framed by nghttp2 from
/// each stream's output. Limits: nghttp2's (`HTTP2Session`) and the server's options
/// (header size and count, body size, the header, body and idle timeouts). Re-entrancy: the
/// gateway may answer, read or pause from inside any delivery; `drive()` then only notes
/// that there is more to do. Loop-thread only.
final class HTTP2ConnectionHandler: ServerConnectionHandler {
    /// What the callbacks recorded, delivered outside nghttp2 in order.
    enum Event {
        /// A request's header block is complete.
        case head(HTTP2Stream)
        /// Body bytes came, or the body ended.
        case body(HTTP2Stream)
        /// The answer's END_STREAM went out while the request was still open.
        case answered(HTTP2Stream)
        case closed(HTTP2Stream)
    }

    let connection: ServerConnection
    let context: ServerContext
    private(set) var session: OpaquePointer?
    /// Streams nghttp2 has open, by id.
    var streams: [Int32: HTTP2Stream] = [:]
    var events: [Event] = []
    /// Streams whose answer is in the output, not yet written, in order.
    var unflushed: [HTTP2Stream] = []
    /// Streams whose END_STREAM frame nghttp2 reported sent in the `mem_send` call under
    /// way (it reports before it returns the frame's bytes).
    var justSent: [HTTP2Stream] = []
    /// Exchanges handed to the gateway and not yet answered, reset streams included: the
    /// gateway's work for this connection, which stops being read at `maxExchanges`.
    private(set) var exchangesOpen = 0
    var thread = LoopThread()
    private var driving = false
    private var driveAgain = false
    /// A header block decoded past twice the bounds (an HPACK bomb) stopped the read half-way
    /// (`NGHTTP2_ERR_PAUSE`): its 431 goes out, and its stream is ended with
    /// RST_STREAM(NO_ERROR), before the rest of the block is read. nghttp2 would otherwise
    /// reset the stream with INTERNAL_ERROR, which drops an answer still queued.
    var headerBlockPaused = false
    /// The connection cannot go on (a protocol error): what nghttp2 queued (its GOAWAY) is
    /// written, then the connection closes.
    private var failed = false
    /// Frames that serve no request (`HTTP2GlitchBudget`).
    var glitches = HTTP2GlitchBudget()
    /// The client's bytes read ahead of nghttp2, for the rules it lets by (`HTTP2FrameScreen`);
    /// `screened`: how many at the front of the input it has read (a paused read leaves some
    /// to nghttp2); `refusal`: where, from the front of the input, the frame it refused starts.
    private var screen = HTTP2FrameScreen()
    private var screened = 0
    private var refusal: HTTP2FrameScreen.Refusal?
    private(set) var goingAway = false
    private var isClosed = false
    /// Monotonic seconds: when the last stream opened or closed (idle timeout), and when
    /// the socket last took output (send timeout).
    var lastActiveAt: Double
    var lastWriteAt: Double

    /// Framed output held before the socket takes it; past it, nothing more is framed and
    /// the client is not read.
    static let outputHighWater = 256 << 10
    static let outputLowWater = 64 << 10
    /// A client that opens streams and resets them has nghttp2 forget them at once, but not
    /// the gateway's work on them: as many as a client may have open.
    static let maxExchanges = Int(HTTP2Session.maxConcurrentStreams)

    init(connection: ServerConnection, context: ServerContext) {
        self.connection = connection
        self.context = context
        lastActiveAt = LazyDeadline.now()
        lastWriteAt = lastActiveAt
        thread.bind()
        session = HTTP2Session.make(for: self, maxHeaderListSize: context.options.maxHeaderSize)
        if session == nil { failed = true }
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var isOpen: Bool { !isClosed && !connection.isClosed }
    var pendingOutput: Int { connection.output.count }
    var limits: HTTP1Limits { context.limits }

    // MARK: the drive loop

    /// Reads what the client sent, delivers it, frames what is ready and writes it; again
    /// while the socket takes everything and nghttp2 has more to send.
    func drive() {
        if driving {
            driveAgain = true
            return
        }
        guard let session, !isClosed else { return }
        driving = true
        while true {
            repeat {
                driveAgain = false
                receive(session)
                deliverEvents()
                send(session)
                deliverEvents()
                if headerBlockPaused {
                    // The refusal and its RST_STREAM(NO_ERROR) are queued or out: the rest of
                    // the block is decoded now, without a field handed over.
                    headerBlockPaused = false
                    driveAgain = true
                }
            } while driveAgain && !isClosed
            guard !isClosed else { break }
            // Written at the end of the loop turn, not now: answers to many streams that
            // complete in one turn (their upstream responses arrived together) then go out
            // in one TLS record and one write, as nginx writes once per turn. The write
            // brings the handler back (`connectionWrote`) to frame what waits.
            if pendingOutput > 0 { connection.scheduleFlush() }
            settle()
            if driveAgain { continue }
            break
        }
        driving = false
        guard !isClosed else { return freeSession() }
        if failed || (nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0) {
            // Done (GOAWAY both ways and no stream left, or a connection error): close once
            // the output is written, reading and dropping what still comes meanwhile; a
            // client that does not take the output gets the send timeout.
            return finish(linger: true)
        }
        connection.setReading(pendingOutput <= Self.outputHighWater && exchangesOpen < Self.maxExchanges)
        updateDeadline()
        context.idle.set(connection, idle: streams.isEmpty && unflushed.isEmpty && pendingOutput == 0 && !goingAway)
    }

    private func receive(_ session: OpaquePointer) {
        let input = connection.input
        while !failed, !isClosed, !headerBlockPaused, input.count > 0,
            pendingOutput <= Self.outputHighWater, exchangesOpen < Self.maxExchanges
        {
            let chunk = input.front
            guard chunk.count > 0 else { break }
            if refusal == nil, screened < chunk.count {
                refusal = screen.read(UnsafeRawBufferPointer(rebasing: chunk[screened...]))
                refusal?.offset += screened
                screened = chunk.count
            }
            let length = min(chunk.count, refusal?.offset ?? chunk.count)
            let n = length == 0 ? 0 : nghttp2_session_mem_recv(session, chunk.baseAddress!, length)
            // A connection error (bad preface, flood, protocol violation): a GOAWAY says so
            // (RFC 9113 §5.4.1) unless nghttp2 has queued its own.
            guard n >= 0 else { return fail(session, code: NGHTTP2_PROTOCOL_ERROR.rawValue) }
            input.drain(n)
            screened -= n
            refusal?.offset -= n
            deliverEvents()
            // nghttp2 has read every frame before the refused one.
            if let refusal, refusal.offset == 0 { return fail(session, code: refusal.violation.errorCode) }
        }
    }

    private func fail(_ session: OpaquePointer, code: UInt32) {
        nghttp2_session_terminate_session(session, code)
        failed = true
        connection.input.drain()
    }

    private func send(_ session: OpaquePointer) {
        while pendingOutput < Self.outputHighWater {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else {
                if n < 0 { failed = true }
                return
            }
            if pendingOutput == 0 { lastWriteAt = LazyDeadline.now() }
            connection.output.append(UnsafeRawBufferPointer(start: data, count: n))
            // Those frames' bytes are in the output now: their answers end here.
            for stream in justSent {
                stream.flushMark = connection.bytesWritten + UInt64(pendingOutput)
                unflushed.append(stream)
            }
            justSent = []
        }
    }

    /// Hands what the callbacks recorded to the gateway (which may answer at once).
    func deliverEvents() {
        while !events.isEmpty {
            let batch = events
            events = []
            for event in batch {
                switch event {
                case .head(let stream): start(stream)
                case .body(let stream): deliverBody(stream)
                case .answered(let stream):
                    // RFC 9113 §8.1: a complete answer before the complete request ends the
                    // stream with RST_STREAM(NO_ERROR); the client stops sending the body.
                    if !stream.closed, let session {
                        nghttp2_submit_rst_stream(
                            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_NO_ERROR.rawValue)
                    }
                case .closed(let stream): closed(stream)
                }
            }
        }
    }

    /// Reports answers whose last byte the socket took, and runs drained actions.
    private func settle() {
        let written = connection.bytesWritten
        while let first = unflushed.first, first.flushMark <= written {
            unflushed.removeFirst()
            first.flushed()
        }
        guard !isClosed else { return }
        // A stream is drained when its own output is framed and the connection's is under
        // the low water mark: waiting for the connection's output to empty would starve a
        // stream while others keep it busy.
        guard pendingOutput <= Self.outputLowWater else { return }
        for stream in streams.values where !stream.drainedActions.isEmpty && stream.output.count == 0 {
            let actions = stream.drainedActions
            stream.drainedActions = []
            for action in actions { action() }
        }
    }

    // MARK: streams

    private func start(_ stream: HTTP2Stream) {
        guard !stream.closed, stream.handler != nil, let session, stream.request.start() else { return }
        guard exchangesOpen < Self.maxExchanges else {
            // Reading stops at the maximum, but one read can reset streams the gateway is still
            // working on and open as many new ones: those are refused unprocessed, which a
            // client may retry (RFC 9113 §8.7, REFUSED_STREAM).
            nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        switch stream.headers.head() {
        case .failure(let refusal):
            stream.refuse(status: refusal.status, description: refusal.description, grpc: stream.headers.grpcCall)
        case .success(let head):
            stream.isHEAD = head.methodName == "HEAD"
            stream.contentLength = head.fields.first("content-length").flatMap { UInt64($0) }
            stream.expectsContinueField = head.fields.first("expect")?.lowercased() == "100-continue"
            stream.headers = HTTP2RequestHeaders(limits: limits)
            stream.request.exchangeOpened()
            exchangesOpen += 1
            let exchange = ServerExchange(head: head, connection: connection.info, body: stream, transport: stream)
            context.handler(exchange)
        }
    }

    private func closed(_ stream: HTTP2Stream) {
        lastActiveAt = LazyDeadline.now()
        if !stream.body.complete { failBody(stream, .clientGone) }
        // nghttp2 forgets a closed stream's unconsumed bytes: credited here, or the
        // connection's window would shrink for good with every such stream.
        let held = stream.received.count
        if held > 0, let session {
            stream.received.drain(held)
            nghttp2_session_consume_connection(session, held)
        }
        // An answer handed off is reported when the socket takes it; any other stream
        // ended without its answer: the client reset it (or the connection failed).
        if stream.response != .handedOff { stream.gone() }
    }

    /// Asks the client, with GOAWAY (RFC 9113 §6.8), to open no more streams: those open
    /// are served, then the connection closes (the server stops accepting, a drain).
    func goAway() {
        thread.check()
        guard let session, !goingAway, !isClosed else { return }
        goingAway = true
        nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
            NGHTTP2_NO_ERROR.rawValue, nil, 0)
        drive()
    }

    /// The gateway answered an exchange (or gave up on a reset one).
    func exchangeEnded() {
        exchangesOpen -= 1
        if exchangesOpen == Self.maxExchanges - 1 && !isClosed { drive() }
    }

    /// Closes once the output is written (see `ServerConnection.finish`).
    private func finish(linger: Bool) {
        isClosed = true
        context.idle.remove(connection)
        connection.setDeadline(context.options.idleTimeout)
        connection.finish(linger: linger)
    }

    // MARK: deadlines

    /// The one connection deadline: the earliest of a header block's, a body's silence
    /// bound or pace check, a stream's or the connection's send timeout, and the idle
    /// timeout with no stream open.
    private func updateDeadline() {
        let options = context.options
        var at = Double.infinity
        for stream in streams.values {
            if !stream.headersComplete {
                at = min(at, stream.headersStartedAt + options.headerTimeout)
            } else if readsBody(stream) {
                at = min(at, stream.lastBodyAt + options.bodyTimeout, stream.body.paceNextAt ?? .infinity)
            }
            if stream.output.count > 0 { at = min(at, stream.lastSentAt + options.idleTimeout) }
        }
        if pendingOutput > 0 { at = min(at, lastWriteAt + options.idleTimeout) }
        if streams.isEmpty && unflushed.isEmpty { at = min(at, lastActiveAt + options.idleTimeout) }
        connection.setDeadline(at.isFinite ? max(0, at - LazyDeadline.now()) : nil)
    }

    func connectionDeadline(_ connection: ServerConnection) {
        thread.check()
        guard let session, !isClosed else { return connection.close() }
        let options = context.options
        let now = LazyDeadline.now() + 0.005
        // A header block cut short holds the whole connection (no other frame may come
        // between its frames), and a client that does not read gets no more time.
        if streams.values.contains(where: { !$0.headersComplete && $0.headersStartedAt + options.headerTimeout <= now })
            || (pendingOutput > 0 && lastWriteAt + options.idleTimeout <= now)
        {
            return connection.close()
        }
        for stream in Array(streams.values) {
            if readsBody(stream) && stream.lastBodyAt + options.bodyTimeout <= now {
                failBody(stream, .timeout)
            } else if readsBody(stream), let check = stream.body.paceNextAt, check <= now {
                judgePace(stream)
            }
            // Output the client's flow-control window has not let out for the idle
            // timeout: the stream is given up (RFC 9113 §6.9: a receiver that withholds
            // window can hold a sender forever).
            if stream.output.count > 0 && stream.lastSentAt + options.idleTimeout <= now && !stream.closed {
                nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
            }
        }
        if streams.isEmpty && unflushed.isEmpty && lastActiveAt + options.idleTimeout <= now {
            nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
        }
        drive()
    }

    // MARK: connection events

    func connectionReadable(_ connection: ServerConnection) {
        thread.check()
        guard session != nil else { return connection.close() }
        drive()
    }

    func connectionPeerClosed(_ connection: ServerConnection) {
        thread.check()
        drive()
        guard !isClosed, !connection.isClosed else { return }
        // Without its read side an HTTP/2 client cannot go on (no SETTINGS ACK, no
        // WINDOW_UPDATE): what is written goes out, then the connection closes.
        if streams.isEmpty {
            finish(linger: false)
        } else {
            connection.flush()
            if !connection.isClosed { connection.close() }
        }
    }

    func connectionWrote(_ connection: ServerConnection) {
        thread.check()
        lastWriteAt = LazyDeadline.now()
        settle()
        drive()
    }

    func connectionClosed(_ connection: ServerConnection) {
        thread.check()
        isClosed = true
        context.idle.remove(connection)
        let open = Array(streams.values)
        streams = [:]
        events = []
        for stream in open where !stream.body.complete { failBody(stream, .clientGone) }
        let pending = unflushed
        unflushed = []
        for stream in pending + open { stream.gone() }
        if !driving { freeSession() }
    }

    private func freeSession() {
        guard let session else { return }
        self.session = nil
        nghttp2_session_del(session)
    }
}
