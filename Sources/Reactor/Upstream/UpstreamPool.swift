internal import CEvent
internal import CShim

/// Settings of one upstream as the pool needs them.
public struct UpstreamEndpoint: Sendable, Equatable {
    public var host: String
    public var port: UInt16
    public var connectTimeout: Double
    /// Idle time allowed while waiting for the response (headers or next body bytes).
    public var responseTimeout: Double
    /// Idle keep-alive connections kept per worker.
    public var maxIdle: Int
    public init(host: String, port: UInt16, connectTimeout: Double, responseTimeout: Double, maxIdle: Int) {
        self.host = host; self.port = port
        self.connectTimeout = connectTimeout; self.responseTimeout = responseTimeout
        self.maxIdle = maxIdle
    }
}

/// Keep-alive connections to one upstream, for one worker's loop (no locking: loop-thread
/// only). A connection carries one request at a time; finished ones return to the idle
/// stack, so a busy worker reuses warm connections instead of reconnecting.
public final class UpstreamPool {
    public let endpoint: UpstreamEndpoint
    let loop: EventLoop
    private var idle: [UpstreamConnection] = []
    public private(set) var openConnections = 0

    public init(loop: EventLoop, endpoint: UpstreamEndpoint) {
        self.loop = loop
        self.endpoint = endpoint
    }

    /// A warm idle connection if there is one, else a new one.
    func acquire(fresh: Bool = false) -> UpstreamConnection {
        if !fresh, let conn = idle.popLast() { return conn }
        openConnections += 1
        return UpstreamConnection(pool: self)
    }

    /// Returns a connection after a clean response; past `maxIdle` it is closed.
    func release(_ conn: UpstreamConnection, reusable: Bool) {
        if reusable && idle.count < endpoint.maxIdle {
            idle.append(conn)
        } else {
            discard(conn)
        }
    }

    /// Drops a connection that failed. It is freed on the next loop turn, outside of
    /// libevent's callbacks for it.
    func discard(_ conn: UpstreamConnection) {
        openConnections -= 1
        loop.execute { withExtendedLifetime(conn) {} }
    }

    /// Closes all idle connections (reload, shutdown).
    public func closeIdle() {
        openConnections -= idle.count
        idle.removeAll()
    }
}

/// One `evhttp_connection` to an upstream. Owns it; frees it in deinit.
final class UpstreamConnection {
    let evcon: OpaquePointer
    /// Requests completed on it; >0 means a reused keep-alive connection.
    var served = 0

    init(pool: UpstreamPool) {
        let ep = pool.endpoint
        // Numeric addresses need no resolver; names go through the loop's async DNS.
        let numeric = ep.host.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }
        guard let evcon = evhttp_connection_base_new(pool.loop.base, numeric ? nil : pool.loop.dnsBase, ep.host, ep.port) else {
            fatalError("evhttp_connection_base_new failed")
        }
        self.evcon = evcon
        var tv = timeval(seconds: ep.responseTimeout)
        evhttp_connection_set_timeout_tv(evcon, &tv)
        evhttp_connection_set_retries(evcon, 0)
    }

    /// Whether the TCP connection is established (connect timeout check). Asked only for a
    /// connection that has not completed a request yet: a reused one was connected, and if
    /// the upstream closed it meanwhile, evhttp reconnects and the retry path covers it.
    var isConnected: Bool {
        if served > 0 { return true }
        guard let bev = evhttp_connection_get_bufferevent(evcon) else { return false }
        let fd = bufferevent_getfd(bev)
        return fd >= 0 && tg_socket_connected(fd) != 0
    }

    var bufferEvent: OpaquePointer? { evhttp_connection_get_bufferevent(evcon) }

    /// No unread bytes in the connection's input buffer.
    var inputIsEmpty: Bool {
        guard let bev = bufferEvent else { return true }
        return evbuffer_get_length(bufferevent_get_input(bev)) == 0
    }

    deinit { evhttp_connection_free(evcon) }
}
