internal import CEvent
internal import CShim
import Glibc

/// Limits and timeouts of one HTTP server.
public struct HTTPServerOptions: Sendable {
    public var maxBodySize: Int = 4 << 20
    public var maxHeaderSize: Int = 32 << 10
    /// Idle keep-alive and read/write timeout on client connections, seconds.
    public var idleTimeout: Double = 60
    public init() {}
}

/// An evhttp server on one loop. Owns its `struct evhttp` (and so its connections).
/// Loop-thread only, except `init`, which may run anywhere before the loop starts.
public final class HTTPServer {
    private let http: OpaquePointer
    private let loop: EventLoop
    private let tls: TLSContext?
    private var bound: [OpaquePointer] = []
    private let handler: (ServerRequest) -> Void

    public init(loop: EventLoop, options: HTTPServerOptions, tls: TLSContext?,
                handler: @escaping (ServerRequest) -> Void) {
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

    /// Changes limits for connections and requests from now on (reload).
    public func apply(_ options: HTTPServerOptions) {
        evhttp_set_max_body_size(http, Int(options.maxBodySize))
        evhttp_set_max_headers_size(http, Int(options.maxHeaderSize))
        var tv = timeval(seconds: options.idleTimeout)
        evhttp_set_timeout_tv(http, &tv)
    }

    /// Serves on an already listening socket (see `Listener`); the server closes it.
    public func serve(listeningSocket fd: Int32) throws {
        guard let handle = evhttp_accept_socket_with_handle(http, fd) else {
            close(fd)
            throw ReactorError("evhttp_accept_socket failed")
        }
        bound.append(handle)
    }

    /// Stops accepting new connections; connections already open keep being served.
    public func stopAccepting() {
        for handle in bound { evhttp_del_accept_socket(http, handle) }
        bound.removeAll()
    }

    fileprivate func handle(_ req: OpaquePointer) {
        handler(ServerRequest(req: req, isTLS: tls != nil))
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

private func tlsBufferEventThunk(_ base: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) -> OpaquePointer? {
    Unmanaged<HTTPServer>.fromOpaque(arg!).takeUnretainedValue().makeTLSBufferEvent()
}
