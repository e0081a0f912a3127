internal import CEvent
internal import CShim
import Glibc

/// One evhttp request behind the engine-neutral seam: its head as an `HTTPRequestHead`, its
/// (already read) body as a `RequestBody`, and the responder's transport. Owns nothing:
/// evhttp frees the request once its reply is finished. Kept until evhttp is replaced.
final class EvhttpTransport: ResponseTransport, RequestBody {
    private var req: OpaquePointer?
    /// Held from `attach` until evhttp is done with the request (flushed, closed, cut or
    /// discarded): evhttp's callbacks reach the responder through this transport.
    private var responder: Responder?
    private var selfRetain: EvhttpTransport?
    private var drained: (() -> Void)?
    private var started = false
    /// Set by the server when the connection closes (evhttp then detaches the request).
    var closed = false
    weak var server: HTTPServer?

    init(req: OpaquePointer) {
        self.req = req
        // Unretained: `selfRetain` keeps the transport alive until evhttp is done with it.
        selfRetain = self
        evhttp_request_set_on_complete_cb(req, flushedThunk, Unmanaged.passUnretained(self).toOpaque())
    }

    static func head(_ req: OpaquePointer) -> HTTPRequestHead {
        let fields = HeaderList(queue: evhttp_request_get_input_headers(req)).fields
        var major: Int32 = 0, minor: Int32 = 0
        tg_request_version(req, &major, &minor)
        let method = HTTPMethod(evhttp_request_get_command(req))?.rawValue ?? "UNKNOWN"
        return HTTPRequestHead(methodName: method, target: String(cString: evhttp_request_get_uri(req)),
                               version: (Int(major), Int(minor)), fields: fields)
    }

    // MARK: ResponseTransport

    var isConnected: Bool { !closed && req.flatMap { evhttp_request_get_connection($0) } != nil }

    var pendingOutput: Int {
        guard let req, let conn = evhttp_request_get_connection(req), let bev = evhttp_connection_get_bufferevent(conn) else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(bev))
    }

    func attach(_ responder: Responder) { self.responder = responder }

    private func writeHead(_ head: HTTPResponseHead, close: Bool) {
        guard let req else { return }
        let out = evhttp_request_get_output_headers(req)
        head.fields.forEachField { name, value in
            let n = String(decoding: name, as: UTF8.self), v = String(decoding: value, as: UTF8.self)
            evhttp_add_header(out, n, v)
        }
        if close { evhttp_remove_header(out, "Connection"); evhttp_add_header(out, "Connection", "close") }
    }

    func sendResponse(_ head: HTTPResponseHead, body: [UInt8], close: Bool) {
        guard let req else { return }
        writeHead(head, close: close)
        let buffer = body.isEmpty ? nil : OwnedBuffer(body)
        evhttp_send_reply(req, Int32(head.status), head.reason ?? HTTPStatus.reason(head.status), buffer?.buffer)
    }

    /// evhttp answers `Expect: 100-continue` itself and cannot send other interim responses.
    func sendInterim(_ head: HTTPResponseHead) {}

    func startResponse(_ head: HTTPResponseHead, close: Bool) {
        guard let req else { return }
        writeHead(head, close: close)
        started = true
        evhttp_send_reply_start(req, Int32(head.status), head.reason ?? HTTPStatus.reason(head.status))
    }

    func sendBody(_ chunk: BodyChunk) {
        guard let req else { return }
        var whole = chunk
        let temp: OwnedBuffer?
        if chunk.count != evbuffer_get_length(chunk.buffer) {
            temp = OwnedBuffer()
            chunk.move(to: temp!.buffer)
            whole = temp!.chunk
        } else { temp = nil }
        // Unretained: see init.
        evhttp_send_reply_chunk_with_cb(req, whole.buffer, drainedThunk, Unmanaged.passUnretained(self).toOpaque())
        withExtendedLifetime(temp) {}
    }

    func endResponse() {
        guard let req else { return }
        evhttp_send_reply_end(req)
    }

    func abortResponse() {
        guard let req else { return }
        self.req = nil
        if let conn = evhttp_request_get_connection(req) {
            // Every exchange on the connection hears of it (this one's responder completes).
            server?.closed(conn)
            evhttp_connection_free(conn)
        } else {
            evhttp_send_reply_end(req)
        }
        let r = responder
        release()
        r?.transportClosed()
    }

    func discardResponse() {
        // The connection is gone and evhttp detached the request: ending it frees it.
        guard let req else { return }
        self.req = nil
        if started { evhttp_send_reply_end(req) } else { evhttp_send_reply(req, 499, "Client Closed Request", nil) }
        release()
    }

    private func release() {
        responder = nil
        selfRetain = nil
    }

    func whenDrained(_ action: @escaping () -> Void) { drained = action }

    fileprivate func onDrained() {
        let action = drained
        drained = nil
        action?()
    }

    fileprivate func onFlushed() {
        req = nil
        let r = responder
        release()
        r?.transportFlushed()
    }

    /// The connection closed under this request (evhttp detached it; it still has to be
    /// ended, which `discardResponse` does when the responder answers).
    func connectionClosed() {
        closed = true
        let r = responder
        responder = nil
        r?.transportClosed()
    }

    // MARK: RequestBody (evhttp has read it whole already)

    private var input: OpaquePointer? { req.map { evhttp_request_get_input_buffer($0) } }

    var framing: RequestBodyFraming {
        let n = input.map { evbuffer_get_length($0) } ?? 0
        return n == 0 ? .none : .length(UInt64(n))
    }

    func collect(limit: Int, _ done: @escaping (Result<[UInt8], RequestBodyFailure>) -> Void) {
        guard let input else { done(.failure(.clientGone)); return }
        let n = evbuffer_get_length(input)
        guard n <= limit else { done(.failure(.tooLarge)); return }
        done(.success(BodyChunk(buffer: input, count: n).take()))
    }

    func stream(to sink: RequestBodySink) {
        guard let input else { sink.requestBodyFailed(.clientGone); return }
        if evbuffer_get_length(input) > 0 { sink.requestBody(BodyChunk(buffer: input)) }
        sink.requestBodyEnd()
    }

    func pause() {}
    func resume() {}
    func discard() { if let input { evbuffer_drain(input, evbuffer_get_length(input)) } }
}

private func drainedThunk(_ conn: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<EvhttpTransport>.fromOpaque(arg!).takeUnretainedValue().onDrained()
}

private func flushedThunk(_ req: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<EvhttpTransport>.fromOpaque(arg!).takeUnretainedValue().onFlushed()
}
