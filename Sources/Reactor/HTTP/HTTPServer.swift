internal import CEvent
internal import CShim
import Glibc

/// Limits and timeouts of one HTTP server.
public struct HTTPServerOptions: Sendable {
    public var maxBodySize: Int = 4 << 20
    public var maxHeaderSize: Int = 32 << 10
    /// Idle keep-alive and read/write timeout on client connections, seconds.
    public var idleTimeout: Double = 60
    /// Client connections this server keeps open at once; at the cap it stops accepting
    /// until one closes.
    public var maxConnections: Int = 10_000
    /// Seconds a client has to send a whole request head (408 and close after that).
    public var headerTimeout: Double = 10
    /// Seconds of silence allowed inside a request body.
    public var bodyTimeout: Double = 30
    public init() {}
}

/// An evhttp server on one loop, serving `ServerExchange`s (kept until tokengate's own
/// HTTP/1.1 engine replaces it). Owns its `struct evhttp` (and so its connections).
/// Loop-thread only, except `init`, which may run anywhere before the loop starts.
public final class HTTPServer: ExchangeServer {
    private let http: OpaquePointer
    private let loop: EventLoop
    private let tls: TLSContext?
    private var bound: [OpaquePointer] = []
    private let handler: (ServerExchange) -> Void
    /// Per evhttp connection: what the gateway sees of it, and the requests open on it.
    private var connections: [OpaquePointer: (info: ClientConnection, open: [EvhttpTransport])] = [:]

    public init(loop: EventLoop, options: HTTPServerOptions, tls: TLSContext?,
                handler: @escaping (ServerExchange) -> Void) {
        guard let http = evhttp_new(loop.base) else { fatalError("evhttp_new failed") }
        self.http = http
        self.loop = loop
        self.tls = tls
        self.handler = handler
        apply(options)
        evhttp_set_allowed_methods(http, HTTPMethod.allowedMask)
        // A proxy must not invent a Content-Type for bodies that had none.
        evhttp_set_default_content_type(http, nil)
        // Unretained: the server outlives its evhttp (freed in deinit).
        let me = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_gencb(http, requestThunk, me)
        if tls != nil { evhttp_set_bevcb(http, tlsBufferEventThunk, me) }
    }

    deinit { evhttp_free(http) }

    public func apply(_ options: HTTPServerOptions) {
        evhttp_set_max_body_size(http, Int(options.maxBodySize))
        evhttp_set_max_headers_size(http, Int(options.maxHeaderSize))
        var tv = timeval(seconds: options.idleTimeout)
        evhttp_set_timeout_tv(http, &tv)
    }

    public func serve(listeningSocket fd: Int32) throws {
        guard let handle = evhttp_accept_socket_with_handle(http, fd) else {
            close(fd)
            throw ReactorError("evhttp_accept_socket failed")
        }
        bound.append(handle)
    }

    public func stopAccepting() {
        for handle in bound { evhttp_del_accept_socket(http, handle) }
        bound.removeAll()
    }

    public var openConnections: Int { connections.count }
    /// evhttp has no connection cap.
    public var acceptPauses: Int { 0 }

    fileprivate func handle(_ req: OpaquePointer) {
        let transport = EvhttpTransport(req: req)
        transport.server = self
        var info = ClientConnection(peer: "", isTLS: tls != nil)
        if let conn = evhttp_request_get_connection(req) {
            if var known = connections[conn] {
                info = known.info
                known.open.removeAll { !$0.isConnected }
                known.open.append(transport)
                connections[conn] = known
            } else {
                var addr: UnsafeMutablePointer<CChar>?
                var port: UInt16 = 0
                evhttp_connection_get_peer(conn, &addr, &port)
                info = ClientConnection(peer: addr.map { String(cString: $0) } ?? "", isTLS: tls != nil)
                connections[conn] = (info, [transport])
                // Unretained: the server outlives its connections.
                evhttp_connection_set_closecb(conn, closeThunk, Unmanaged.passUnretained(self).toOpaque())
            }
        } else {
            transport.closed = true
        }
        let exchange = ServerExchange(head: EvhttpTransport.head(req), connection: info, body: transport,
                                      responder: Responder(transport: transport))
        handler(exchange)
    }

    func closed(_ conn: OpaquePointer) {
        evhttp_connection_set_closecb(conn, nil, nil)
        guard let gone = connections.removeValue(forKey: conn) else { return }
        for t in gone.open { t.connectionClosed() }
    }

    fileprivate func makeTLSBufferEvent() -> OpaquePointer? {
        guard let tls else { return nil }
        return tg_tls_accepting_bufferevent(loop.base, tls.ctx)
    }
}

public struct ReactorError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

private func requestThunk(_ req: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<HTTPServer>.fromOpaque(arg!).takeUnretainedValue().handle(req!)
}

private func closeThunk(_ conn: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<HTTPServer>.fromOpaque(arg!).takeUnretainedValue().closed(conn!)
}

private func tlsBufferEventThunk(_ base: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> OpaquePointer? {
    Unmanaged<HTTPServer>.fromOpaque(arg!).takeUnretainedValue().makeTLSBufferEvent()
}
