internal import CEvent
internal import CShim
import Glibc

/// One request received by an `HTTPServer`. Not owning: evhttp owns the request and frees it
/// after the reply is finished (`respond`, or `finishStreaming`). Loop-thread only.
public struct ServerRequest {
    let req: OpaquePointer
    /// Whether this request arrived on a TLS listener.
    public let isTLS: Bool

    public var method: HTTPMethod? { HTTPMethod(evhttp_request_get_command(req)) }

    /// The request-target exactly as received (RFC 9112 §3.2), not decoded.
    public var rawTarget: String { String(cString: evhttp_request_get_uri(req)) }

    public var headers: HeaderList { HeaderList(queue: evhttp_request_get_input_headers(req)) }
    public var responseHeaders: HeaderList { HeaderList(queue: evhttp_request_get_output_headers(req)) }

    /// HTTP version of the request line as (major, minor).
    public var version: (Int, Int) {
        var major: Int32 = 0, minor: Int32 = 0
        tg_request_version(req, &major, &minor)
        return (Int(major), Int(minor))
    }

    public var bodyLength: Int { evbuffer_get_length(evhttp_request_get_input_buffer(req)) }

    /// A copy of the (already fully read) request body, without consuming it.
    public var bodyBytes: [UInt8] {
        let buf = evhttp_request_get_input_buffer(req)
        let n = evbuffer_get_length(buf)
        var out = [UInt8](repeating: 0, count: n)
        if n > 0 { _ = out.withUnsafeMutableBytes { evbuffer_copyout(buf, $0.baseAddress, n) } }
        return out
    }

    /// Replaces the request body (before it is forwarded).
    public func replaceBody(_ bytes: [UInt8]) {
        let buf = evhttp_request_get_input_buffer(req)
        evbuffer_drain(buf, evbuffer_get_length(buf))
        if !bytes.isEmpty { _ = bytes.withUnsafeBytes { evbuffer_add(buf, $0.baseAddress, bytes.count) } }
    }

    /// The TCP peer's address (numeric) — the address X-Forwarded-For trust is decided on.
    public var peerAddress: String {
        guard let conn = evhttp_request_get_connection(req) else { return "" }
        var addr: UnsafeMutablePointer<CChar>?
        var port: UInt16 = 0
        evhttp_connection_get_peer(conn, &addr, &port)
        return addr.map { String(cString: $0) } ?? ""
    }

    /// Sends a complete reply with `body`.
    public func respond(status: Int, reason: String? = nil, body: OwnedBuffer?) {
        evhttp_send_reply(req, Int32(status), reason ?? HTTPStatus.reason(status), body?.buffer)
    }

    /// Starts a streamed reply: headers now, body chunks later. With no Content-Length in
    /// `responseHeaders`, an HTTP/1.1 client gets chunked transfer coding.
    public func startStreaming(status: Int, reason: String) {
        evhttp_send_reply_start(req, Int32(status), reason)
    }

    /// Moves `chunk` to the client. `listener.drained()` runs once the connection's output
    /// buffer has been written out (flow control: the caller pauses its producer until then).
    /// evhttp keeps one such callback per connection, the latest; the listener is not
    /// retained, so its owner keeps it alive until the reply is finished or the client gone.
    public func sendChunk(_ chunk: BodyChunk, listener: DrainListener) {
        evhttp_send_reply_chunk_with_cb(req, chunk.buffer, drainedThunk,
                                        Unmanaged.passUnretained(listener as AnyObject).toOpaque())
    }

    /// Bytes waiting in the client connection's output buffer.
    public var pendingOutput: Int {
        guard let conn = evhttp_request_get_connection(req),
              let bev = evhttp_connection_get_bufferevent(conn) else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(bev))
    }

    /// Ends a streamed reply normally.
    public func finishStreaming() { evhttp_send_reply_end(req) }

    /// Ends a streamed reply abnormally: the connection is closed without the final chunk, so
    /// the client can tell the body is truncated. The request is freed; do not use it after.
    public func abort() {
        if let conn = evhttp_request_get_connection(req) {
            evhttp_connection_set_closecb(conn, nil, nil)
            evhttp_connection_free(conn)
        } else {
            evhttp_send_reply_end(req)
        }
    }

    /// Calls `listener.requestFlushed()` once the whole reply has been written to the socket
    /// (not when the client went away first). The listener is not retained.
    public func onFlushed(_ listener: FlushListener) {
        // Unretained: the listener (a worker) outlives every request it serves.
        evhttp_request_set_on_complete_cb(req, flushedThunk, Unmanaged.passUnretained(listener as AnyObject).toOpaque())
    }

    /// The client connection this request arrived on, while it is open.
    public var connection: ClientConnectionID? {
        evhttp_request_get_connection(req).map(ClientConnectionID.init)
    }

    /// Whether the client connection is still there.
    public var isConnected: Bool { evhttp_request_get_connection(req) != nil }

    /// Calls `handler` when the client connection closes (after this or a later request on
    /// it). Not retained: the caller keeps `handler` alive until it has been called.
    public func onClientClose(_ handler: CloseHandler) {
        guard let conn = evhttp_request_get_connection(req) else { return }
        evhttp_connection_set_closecb(conn, closeThunk, Unmanaged.passUnretained(handler).toOpaque())
    }
}

/// Owned by whoever registered it (the proxy exchange) for as long as it is registered.
public final class CloseHandler {
    let action: () -> Void
    public init(_ action: @escaping () -> Void) { self.action = action }
}

private func closeThunk(_ conn: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    evhttp_connection_set_closecb(conn, nil, nil)
    Unmanaged<CloseHandler>.fromOpaque(arg!).takeUnretainedValue().action()
}

/// Receives "the client's output buffer is empty" from `ServerRequest.sendChunk`.
public protocol DrainListener: AnyObject {
    func drained()
}

private func drainedThunk(_ conn: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    (Unmanaged<AnyObject>.fromOpaque(arg!).takeUnretainedValue() as! DrainListener).drained()
}

/// Receives "this reply is fully written" from `ServerRequest.onFlushed`.
public protocol FlushListener: AnyObject {
    func requestFlushed(on connection: ClientConnectionID?)
}

/// Identifies an open client connection (its `evhttp_connection`); valid as a key only
/// while the connection is open — forget it in the close handler.
public struct ClientConnectionID: Hashable {
    let pointer: OpaquePointer
}

private func flushedThunk(_ req: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    let conn = req.flatMap { evhttp_request_get_connection($0) }.map(ClientConnectionID.init)
    (Unmanaged<AnyObject>.fromOpaque(arg!).takeUnretainedValue() as! FlushListener).requestFlushed(on: conn)
}
