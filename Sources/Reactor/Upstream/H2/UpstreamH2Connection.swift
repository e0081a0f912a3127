internal import CNghttp2

/// One HTTP/2 connection to an upstream (RFC 9113), carrying many calls at once as streams.
/// It is opened like an HTTP/1.1 one (`UpstreamConnection`: resolving, connecting, the TLS
/// handshake with ALPN `h2`), then driven through nghttp2's memory API over that transport:
/// `receive` feeds the input to `nghttp2_session_mem_recv`, whose callbacks only record on
/// each stream; `deliver` then tells the calls' delegates; `send` moves what
/// `nghttp2_session_mem_send` frames into the transport's output.
///
/// Calls that come while it opens wait in `waiting` and are submitted once it is up. A
/// connection that fails, closes or times out fails every call on it (each may retry once
/// on a new connection, when nothing of its request can have been processed). Owned by its
/// pool (`UpstreamPool.h2Connections`) and by the calls on it; frees the session once.
/// Loop-thread only.
final class UpstreamH2Connection: UpstreamTransportHandler {
    unowned let pool: UpstreamPool
    let link: UpstreamConnection
    var session: OpaquePointer?
    /// Until the upstream's first SETTINGS: calls wait, so none is sent past a concurrency
    /// limit it has not said yet (and then refused).
    var opening = true
    /// The upstream's first SETTINGS frame came (recorded by the callback).
    var settingsReceived = false
    private(set) var closed = false
    var waiting: [UpstreamCall] = []
    var streams: [Int32: UpstreamCall] = [:]
    /// Calls with news recorded by the callbacks, told in `deliver`.
    var touched: [UpstreamCall] = []
    /// Inside nghttp2 (mem_recv or mem_send): no re-entry, no session change.
    var inSession = false
    var sending = false
    var sendAgain = false
    private var connectTimer: LoopTimer?
    /// The pool is going away (its `deinit` closes this): nothing is reported back to it.
    var poolGone = false

    /// Past this many framed bytes waiting for the socket, nothing more is framed.
    static let outputHighWater = 256 << 10

    init(pool: UpstreamPool) {
        self.pool = pool
        link = UpstreamConnection(pool: pool)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var transport: UpstreamTransport { link.transport }

    /// Streams it may still take: none once it is closing, or the upstream said GOAWAY.
    var room: Int {
        guard !closed else { return 0 }
        var limit = 100
        if let session {
            guard nghttp2_session_check_request_allowed(session) != 0 else { return 0 }
            limit = Int(
                min(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 1 << 20))
        }
        return min(limit, UpstreamH2Session.maxStreams) - waiting.count - streams.count
    }

    var isIdle: Bool { waiting.isEmpty && streams.isEmpty }

    func open() {
        connectTimer = LoopTimer(loop: pool.loop, seconds: pool.endpoint.connectTimeout) { [weak self] in
            self?.fail(.connectTimeout)
        }
        link.open { [weak self] ok in self?.opened(ok) }
    }

    private func opened(_ ok: Bool) {
        guard opening, !closed else { return }
        guard ok else {
            fail(link.openFailure.map { .tlsHandshakeFailed(reason: $0) } ?? .connectionFailed)
            return
        }
        guard let session = UpstreamH2Session.make(for: self, maxHeaderListSize: pool.limits.maxHeaderBytes) else {
            fail(.connectionFailed)
            return
        }
        self.session = session
        transport.handler = self
        guard transport.armRead(timeout: nil) else {
            fail(.connectionFailed)
            return
        }
        // The preface and our SETTINGS go now; the calls once the upstream's SETTINGS came
        // (the connect timeout bounds the wait).
        send()
    }

    /// The upstream's SETTINGS came: the connection is up, the waiting calls go.
    private func settled() {
        opening = false
        connectTimer?.cancel()
        connectTimer = nil
        let calls = waiting
        waiting.removeAll()
        for call in calls { submit(call) }
    }

    /// Takes a call: submitted now when the connection is up, else when it is.
    func add(_ call: UpstreamCall) {
        if opening {
            waiting.append(call)
        } else {
            submit(call)
            send()
        }
    }

    private func submit(_ call: UpstreamCall) {
        guard let session, let stream = call.h2 else { return }
        var list = UpstreamH2RequestFields(call.request, tls: pool.endpoint.tls != nil)
        var provider = UpstreamH2Session.dataProvider
        let withBody = call.body != nil
        let id = list.withList { nva, count in
            withBody
                ? nghttp2_submit_request(session, nil, nva, count, &provider, nil)
                : nghttp2_submit_request(session, nil, nva, count, nil, nil)
        }
        guard id > 0 else {
            call.finish(.connectionFailed)
            return
        }
        stream.id = id
        stream.requestEnded = !withBody
        streams[id] = call
        call.h2Submitted()
    }

    /// A call is done with its stream: a stream still open is reset (CANCEL), so the
    /// upstream stops work nobody waits for (RFC 9113 §8.1; the "MadeYouReset" class).
    func remove(_ call: UpstreamCall, _ stream: UpstreamH2Stream) {
        if let i = waiting.firstIndex(where: { $0 === call }) {
            waiting.remove(at: i)
        }
        if stream.id > 0, streams.removeValue(forKey: stream.id) != nil {
            if stream.closeCode == nil, let session {
                nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
                // Bytes held for the stream are the connection's window too.
                let held = stream.received.count
                if held > 0 { nghttp2_session_consume_connection(session, held) }
                send()
            }
        }
        pool.h2StreamEnded(self)
    }

    /// Credits bytes the delegate took to the upstream's windows.
    func consumed(_ stream: UpstreamH2Stream, _ count: Int) {
        guard count > 0, let session else { return }
        if stream.isOpen {
            nghttp2_session_consume(session, stream.id, count)
        } else {
            nghttp2_session_consume_connection(session, count)
        }
        send()
    }

    /// New request body bytes for a stream whose provider waits.
    func wake(_ stream: UpstreamH2Stream) {
        guard stream.deferred, stream.isOpen, let session else { return }
        stream.deferred = false
        nghttp2_session_resume_data(session, stream.id)
        send()
    }

    // MARK: Driving

    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool) {
        guard !closed else { return }
        let outcome = transport.fill()
        receive()
        if opening && settingsReceived && !closed { settled() }
        deliver()
        switch outcome {
        case .eof, .failed:
            fail(.connectionFailed)
            return
        case .bytes, .wouldBlock:
            break
        }
        send()
    }

    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool) {
        guard !closed else { return }
        if timedOut {
            fail(.responseTimeout)
            return
        }
        send()
    }

    func transportConnected(_ transport: UpstreamTransport, error: Int32) {}

    private func receive() {
        guard let session else { return }
        let input = transport.input
        inSession = true
        defer { inSession = false }
        while input.count > 0 {
            let chunk = input.front
            let n = nghttp2_session_mem_recv(
                session, chunk.baseAddress!.assumingMemoryBound(to: UInt8.self), chunk.count)
            if n < 0 {
                // A protocol error from the upstream: GOAWAY is queued, every stream fails.
                inSession = false
                fail(.invalidResponse)
                return
            }
            input.drain(n)
        }
    }

    /// Tells each call what its stream recorded, in arrival order.
    func deliver() {
        while !touched.isEmpty {
            let calls = touched
            touched.removeAll()
            for call in calls {
                call.h2?.touched = false
                call.h2Deliver()
            }
        }
    }

    /// Frames what nghttp2 has queued into the transport's output and writes it.
    func send() {
        guard !closed, let session, !inSession else { return }
        if sending {
            sendAgain = true
            return
        }
        sending = true
        defer { sending = false }
        repeat {
            sendAgain = false
            inSession = true
            // Stopped at the high-water mark with frames still to make: once the socket
            // takes what waits, framing goes on now. No event would bring it back: a write
            // that completes arms none, and an upstream with a large window sends no
            // WINDOW_UPDATE for a long while (a 4 MB gRPC message stalled here).
            var atHighWater = false
            while true {
                guard transport.pendingOutput < Self.outputHighWater else {
                    atHighWater = true
                    break
                }
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &data)
                if n < 0 {
                    inSession = false
                    fail(.connectionFailed)
                    return
                }
                if n == 0 { break }
                transport.output.append(UnsafeRawBufferPointer(start: data, count: n))
            }
            inSession = false
            // A body paused at the high-water mark goes on once the provider took enough.
            for call in streams.values { call.h2ResumeBodyIfDrained() }
            switch transport.flush(timeout: pool.endpoint.responseTimeout) {
            case .done: if atHighWater { sendAgain = true }
            case .pending: break
            case .failed:
                fail(.connectionFailed)
                return
            }
            deliver()
        } while sendAgain && !closed
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
            && transport.pendingOutput == 0
        {
            // GOAWAY both ways, nothing left to say: the connection is done.
            fail(.connectionFailed)
        }
    }

    /// Ends the connection: every call on it fails (or retries), the pool forgets it.
    func fail(_ failure: UpstreamFailure) {
        guard !closed else { return }
        closed = true
        connectTimer?.cancel()
        connectTimer = nil
        let calls = waiting + streams.values.sorted { ($0.h2?.id ?? 0) < ($1.h2?.id ?? 0) }
        waiting.removeAll()
        streams.removeAll()
        touched.removeAll()
        link.close()
        if !poolGone { pool.h2Closed(self) }
        for call in calls { call.h2ConnectionLost(failure) }
    }

    /// Closes an idle connection (the pool's, at reload or past `maxIdle`).
    func close() {
        guard !closed else { return }
        if let session {
            nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n > 0 { _ = transport.send(UnsafeRawBufferPointer(start: data, count: n), timeout: nil) }
        }
        fail(.connectionFailed)
    }
}
