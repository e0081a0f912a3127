internal import CEvent

/// Why an upstream exchange failed, as the gateway maps it to 502/504.
public enum UpstreamFailure: Sendable, Equatable {
    case connectTimeout, responseTimeout, connectionFailed, invalidResponse, cancelled

    public var isTimeout: Bool { self == .connectTimeout || self == .responseTimeout }
}

/// Receives the events of one upstream exchange, in order: `interim`*, `head`, `body`*,
/// then exactly one of `complete` or `failed`.
public protocol UpstreamCallDelegate: AnyObject {
    func upstreamHead(_ head: HTTPResponseHead)
    /// An interim response (1xx other than 100 and 101), before the head.
    func upstreamInterim(_ head: HTTPResponseHead)
    func upstreamBody(_ chunk: BodyChunk)
    func upstreamComplete()
    func upstreamFailed(_ failure: UpstreamFailure, afterHead: Bool)
}

/// One request to an upstream over a pooled keep-alive connection: streams the response
/// to its delegate as it arrives, with a connect deadline and an idle response deadline.
/// A request without a body that fails on a reused keep-alive connection before any
/// response byte (the upstream closed it while idle) is retried once on a new connection.
public final class UpstreamCall {
    public struct Request {
        public var method: HTTPMethod
        public var target: String
        /// The request's fields (Content-Length is set by the call itself).
        public var fields: HTTP1Fields
        /// The body to send, if any: read from it only when the call starts.
        public var body: RequestBody?
        public init(method: HTTPMethod, target: String, fields: HTTP1Fields, body: RequestBody?) {
            self.method = method; self.target = target; self.fields = fields; self.body = body
        }
    }

    private let pool: UpstreamPool
    private let request: Request
    private weak var delegate: UpstreamCallDelegate?
    private var connection: UpstreamConnection?
    private var evreq: OpaquePointer?
    private var connectTimer: LoopTimer?
    private var gotHead = false
    private var finished = false
    private var failure: UpstreamFailure?
    private var retried = false
    private var body: OpaquePointer?
    private var hasBody = false
    /// Keeps self alive while libevent holds a pointer to it; set in `start`, cleared in `end`.
    private var selfRetain: UpstreamCall?

    public init(pool: UpstreamPool, request: Request, delegate: UpstreamCallDelegate) {
        self.pool = pool
        self.request = request
        self.delegate = delegate
    }

    /// Sends the request. evhttp's client sends a body from memory, so it is gathered first
    /// (the evhttp server has read it whole already: this moves it, it does not wait).
    public func start() {
        selfRetain = self
        guard let source = request.body, source.framing != .none else { send(fresh: false); return }
        let gather = BodyGatherer { [weak self] buffer in
            guard let self, !self.finished else { return }
            guard let buffer else { self.end(failure: .cancelled); return }
            if evbuffer_get_length(buffer) > 0 { self.hasBody = true; self.body = buffer } else { evbuffer_free(buffer) }
            self.send(fresh: false)
        }
        source.stream(to: gather)
    }

    private func send(fresh: Bool) {
        let conn = pool.acquire(fresh: fresh)
        connection = conn
        // Unretained: `selfRetain` keeps this call alive until `end`.
        guard let req = evhttp_request_new(doneThunk, Unmanaged.passUnretained(self).toOpaque()) else {
            end(failure: .connectionFailed)
            return
        }
        evreq = req
        evhttp_request_set_header_cb(req, headerThunk)
        evhttp_request_set_chunked_cb(req, chunkThunk)
        evhttp_request_set_error_cb(req, errorThunk)
        let out = HeaderList(queue: evhttp_request_get_output_headers(req))
        request.fields.forEachField { name, value in
            evhttp_add_header(out.queue, String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
        if let body {
            // Moved, not copied: a request with a body is never retried.
            evbuffer_add_buffer(evhttp_request_get_output_buffer(req), body)
            out.add("Content-Length", String(evbuffer_get_length(evhttp_request_get_output_buffer(req))))
        } else if request.method == .POST || request.method == .PUT || request.method == .PATCH {
            out.add("Content-Length", "0")
        }
        if evhttp_make_request(conn.evcon, req, request.method.cmd, request.target) != 0 {
            // libevent freed the request on failure.
            evreq = nil
            end(failure: .connectionFailed)
            return
        }
        if !conn.isConnected {
            connectTimer = LoopTimer(loop: pool.loop, seconds: pool.endpoint.connectTimeout) { [weak self] in
                self?.connectDeadline()
            }
        }
    }

    /// Abandons the exchange (client went away). No delegate call follows.
    public func cancel() {
        guard !finished else { return }
        delegate = nil
        failure = .cancelled
        if let req = evreq {
            evreq = nil
            evhttp_cancel_request(req)
        }
        end(failure: .cancelled)
    }

    /// Flow control: stop reading the upstream while the client is slow.
    public func pause() {
        if let bev = connection?.bufferEvent { bufferevent_disable(bev, Int16(EV_READ)) }
    }

    public func resume() {
        if let bev = connection?.bufferEvent { bufferevent_enable(bev, Int16(EV_READ)) }
    }

    private func connectDeadline() {
        connectTimer = nil
        guard !finished, let conn = connection, !conn.isConnected, let req = evreq else { return }
        failure = .connectTimeout
        evreq = nil
        evhttp_cancel_request(req)
        end(failure: .connectTimeout)
    }

    fileprivate func onHead(_ req: OpaquePointer) -> Int32 {
        connectTimer?.cancel()
        connectTimer = nil
        let status = Int(evhttp_request_get_response_code(req))
        if status < 200 {
            // libevent's client takes an interim 1xx (e.g. 103 Early Hints) for the final
            // response and would leave the real one in the connection for the next request —
            // another client's. Fail this exchange and close the connection instead.
            failure = .invalidResponse
            return -1
        }
        gotHead = true
        let reason = evhttp_request_get_response_code_line(req).map { String(cString: $0) } ?? ""
        delegate?.upstreamHead(HTTPResponseHead(status: status, reason: reason,
                                                fields: HeaderList(queue: evhttp_request_get_input_headers(req)).fields))
        return 0
    }

    fileprivate func onChunk(_ req: OpaquePointer) {
        delegate?.upstreamBody(BodyChunk(buffer: evhttp_request_get_input_buffer(req)))
    }

    fileprivate func onError(_ error: evhttp_request_error) {
        switch error {
        case EVREQ_HTTP_TIMEOUT: failure = failure ?? (connection?.isConnected == true ? .responseTimeout : .connectTimeout)
        case EVREQ_HTTP_INVALID_HEADER, EVREQ_HTTP_DATA_TOO_LONG: failure = failure ?? .invalidResponse
        case EVREQ_HTTP_REQUEST_CANCEL:
            // Cancelled by us: libevent will not call the done callback.
            failure = failure ?? .cancelled
        default: failure = failure ?? .connectionFailed
        }
    }

    fileprivate func onDone(_ req: OpaquePointer?) {
        evreq = nil
        connectTimer?.cancel()
        connectTimer = nil
        guard let req, evhttp_request_get_response_code(req) != 0, failure == nil else {
            let why = failure ?? .connectionFailed
            if let conn = connection, conn.served > 0, !gotHead, why == .connectionFailed,
               !retried, !hasBody {
                // Stale keep-alive connection: one retry on a new connection.
                retried = true
                failure = nil
                pool.discard(conn)
                connection = nil
                send(fresh: true)
                return
            }
            end(failure: why)
            return
        }
        if !gotHead { _ = onHead(req) }
        end(failure: nil)
    }

    private func end(failure: UpstreamFailure?) {
        guard !finished else { return }
        finished = true
        connectTimer?.cancel()
        connectTimer = nil
        if let body { evbuffer_free(body); self.body = nil }
        if let conn = connection {
            connection = nil
            conn.served += 1
            // Reused only when nothing is left unread: bytes after a complete response belong
            // to no request, and must never reach the next one.
            if failure == nil && conn.inputIsEmpty { pool.release(conn, reusable: true) } else { pool.discard(conn) }
        }
        let delegate = self.delegate
        self.delegate = nil
        if let failure {
            if failure != .cancelled { delegate?.upstreamFailed(failure, afterHead: gotHead) }
        } else {
            delegate?.upstreamComplete()
        }
        selfRetain = nil
    }
}

private func call(_ arg: UnsafeMutableRawPointer?) -> UpstreamCall {
    Unmanaged<UpstreamCall>.fromOpaque(arg!).takeUnretainedValue()
}

private func headerThunk(_ req: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    call(arg).onHead(req!)
}

private func chunkThunk(_ req: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    call(arg).onChunk(req!)
}

private func errorThunk(_ error: evhttp_request_error, _ arg: UnsafeMutableRawPointer?) {
    call(arg).onError(error)
}

private func doneThunk(_ req: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    call(arg).onDone(req)
}

/// Gathers a streamed request body into one evbuffer for evhttp's client; nil on failure.
private final class BodyGatherer: RequestBodySink {
    private var buffer: OpaquePointer? = evbuffer_new()
    private let done: (OpaquePointer?) -> Void
    init(done: @escaping (OpaquePointer?) -> Void) { self.done = done }
    func requestBody(_ chunk: BodyChunk) { if let buffer { chunk.move(to: buffer) } }
    func requestBodyEnd() { let b = buffer; buffer = nil; done(b) }
    func requestBodyFailed(_ failure: RequestBodyFailure) {
        if let buffer { evbuffer_free(buffer) }
        buffer = nil
        done(nil)
    }
    deinit { if let buffer { evbuffer_free(buffer) } }
}
