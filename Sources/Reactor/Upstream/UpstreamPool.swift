import Glibc

/// Settings of one upstream as the pool needs them.
public struct UpstreamEndpoint: Sendable, Equatable {
    public var host: String
    public var port: UInt16
    public var connectTimeout: Double
    /// Idle time allowed while waiting for the response (headers or next body bytes).
    public var responseTimeout: Double
    /// Idle keep-alive connections kept per worker.
    public var maxIdle: Int
    /// HTTPS upstreams: how to speak TLS to it (nil: plain http). A context is equal only
    /// to itself, so each config load's context gets new pools.
    public var tls: UpstreamTLSContext?
    public init(
        host: String, port: UInt16, connectTimeout: Double, responseTimeout: Double, maxIdle: Int,
        tls: UpstreamTLSContext? = nil
    ) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.maxIdle = maxIdle
        self.tls = tls
    }
}

/// Keep-alive connections to one upstream, for one worker's loop (no locking: loop-thread
/// only, checked in debug builds). A connection carries one exchange at a time; one that
/// ends cleanly returns to the idle stack (most recent first, so a busy worker reuses warm
/// connections), up to `maxIdle`. Idle connections watch for reads: the upstream closing
/// one, or sending bytes nobody asked for, drops it before it can be reused.
public final class UpstreamPool {
    public let endpoint: UpstreamEndpoint
    let loop: EventLoop
    /// The endpoint's address when its host is an IP literal (no resolver needed).
    let numericAddress: UpstreamAddress?
    /// What the response parser accepts.
    let limits = HTTP1Limits()
    /// Unchecked exclusivity: loop-thread only, never mutated across a call out.
    @exclusivity(unchecked) private var idle: [UpstreamConnection] = []
    /// Connections open or opening, idle or in use.
    public private(set) var openConnections = 0
    /// HTTPS: the newest session the upstream gave, offered by the next connection.
    let sessionSlot: TLSSessionSlot?
    /// HTTPS: TLS handshakes completed, and how many of them resumed a session.
    public private(set) var tlsHandshakes = 0
    public private(set) var tlsResumedHandshakes = 0
    /// The last response from this upstream was HTTP/1.0: it will not send `100 Continue`,
    /// so a request's body is not held back waiting for one.
    var answersHTTP10 = false
    #if DEBUG
        private var thread: pthread_t?
    #endif

    public init(loop: EventLoop, endpoint: UpstreamEndpoint) {
        self.loop = loop
        self.endpoint = endpoint
        numericAddress = UpstreamAddress(numeric: endpoint.host, port: endpoint.port)
        sessionSlot = endpoint.tls == nil ? nil : TLSSessionSlot()
    }

    deinit {
        for conn in idle { conn.close() }
    }

    /// Debug builds: the pool (and every call on it) is used from one thread only, the
    /// first to use it — its loop's.
    func assertOnLoop() {
        #if DEBUG
            let me = pthread_self()
            if let thread {
                precondition(pthread_equal(thread, me) != 0, "UpstreamPool used off its loop's thread")
            } else {
                thread = me
            }
        #endif
    }

    /// A warm idle connection unless `fresh`, else a new, unopened one.
    func acquire(fresh: Bool) -> UpstreamConnection {
        if !fresh, let conn = idle.popLast() { return conn }
        openConnections += 1
        return UpstreamConnection(pool: self)
    }

    /// Takes a connection back after an exchange: kept idle when `reusable` and there is
    /// room, else closed.
    func release(_ conn: UpstreamConnection, reusable: Bool) {
        if reusable && !conn.isClosed && idle.count < endpoint.maxIdle && conn.becomeIdle() {
            idle.append(conn)
        } else {
            discard(conn)
        }
    }

    /// Closes a connection that is not (or no longer) idle.
    func discard(_ conn: UpstreamConnection) {
        guard !conn.isClosed else { return }
        conn.close()
        openConnections -= 1
    }

    /// A connection leaves the pool for good, open (a tunnel after a 101 owns it now).
    func detach(_ conn: UpstreamConnection) {
        openConnections -= 1
    }

    /// An idle connection was closed by the upstream or got unexpected bytes.
    func idleConnectionLost(_ conn: UpstreamConnection) {
        guard let i = idle.firstIndex(where: { $0 === conn }) else { return }
        idle.remove(at: i)
        discard(conn)
    }

    /// Closes all idle connections (reload, shutdown).
    public func closeIdle() {
        assertOnLoop()
        let closing = idle
        idle.removeAll()
        for conn in closing { discard(conn) }
    }

    func handshakeDone(resumed: Bool) {
        tlsHandshakes += 1
        if resumed { tlsResumedHandshakes += 1 }
    }

    /// Idle connections, for tests.
    var idleCount: Int { idle.count }
}
