import Glibc

/// Settings of one upstream as the pool needs them.
public struct UpstreamEndpoint: Sendable, Equatable {
    public var host: String
    public var port: UInt16
    public var connectTimeout: Double
    /// Idle time allowed while waiting for the response (headers or next body bytes).
    public var responseTimeout: Double
    /// Idle keep-alive connections kept per worker; a burst's surplus is kept for
    /// `surplusGrace` seconds more (`UpstreamPool`). 0: none (every connection closes after
    /// its exchange).
    public var maxIdle: Int
    /// How long an idle connection past `maxIdle` waits unused before it is closed.
    public var surplusGrace: Double = 1
    /// HTTPS upstreams: how to speak TLS to it (nil: plain http). A context is equal only
    /// to itself, so each config load's context gets new pools.
    public var tls: UpstreamTLSContext?
    /// Connections this pool may have open at once, idle or in use (its worker's share).
    public var maxConnections: Int
    /// Requests that may wait for a connection at the cap (`UpstreamPool.wait`), and for how
    /// many seconds each.
    public var maxPending: Int
    public var pendingTimeout: Double
    /// Speak HTTP/2 to it (RFC 9113): with prior knowledge over plain TCP (h2c), or as ALPN
    /// `h2` over TLS (`tls` then offers it). Requests are streams multiplexed on few
    /// connections (`UpstreamH2Connection`).
    public var http2 = false
    public init(
        host: String, port: UInt16, connectTimeout: Double, responseTimeout: Double, maxIdle: Int,
        tls: UpstreamTLSContext? = nil, maxConnections: Int = .max, maxPending: Int = 0, pendingTimeout: Double = 5
    ) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.maxIdle = maxIdle
        self.tls = tls
        self.maxConnections = maxConnections
        self.maxPending = maxPending
        self.pendingTimeout = pendingTimeout
    }
}

/// Keep-alive connections to one upstream, for one worker's loop (no locking: loop-thread
/// only, checked in debug builds). A connection carries one exchange at a time; one that
/// ends cleanly returns to the idle stack (most recent first, so a busy worker reuses warm
/// connections). Idle connections watch for reads: the upstream closing one, or sending
/// bytes nobody asked for, drops it before it can be reused.
///
/// `maxIdle` bounds the idle stack once a burst is over, not within it. Answers come back
/// in bursts: an HTTP/2 client's streams, or many clients' requests, answered in one loop
/// turn, then their next requests a round trip later. Closing every connection past
/// `maxIdle` at once made the next burst open as many again (0.4–0.8 connects per request
/// under 320 requests in flight a worker, a quarter of the worker's CPU). So the surplus
/// stays for `surplusGrace` seconds unused, then the longest idle go, down to `maxIdle`
/// (HAProxy purges its idle surplus over `pool-purge-delay` the same way). The surplus is
/// never more than the connections the burst had open anyway.
public final class UpstreamPool {
    public let endpoint: UpstreamEndpoint
    let loop: EventLoop
    /// The endpoint's address when its host is an IP literal (no resolver needed).
    let numericAddress: UpstreamAddress?
    /// What the response parser accepts.
    let limits = HTTP1Limits()
    /// Unchecked exclusivity: loop-thread only, never mutated across a call out.
    @exclusivity(unchecked) private var idle: [UpstreamConnection] = []
    /// When each idle connection went idle, in the stack's order (the bottom idled first).
    @exclusivity(unchecked) private var idleSince: [Double] = []
    /// Closes the idle surplus once it has waited `surplusGrace` (armed while there is one).
    private var surplusTimer: LoopTimer?
    /// Connections open or opening, idle or in use. (Counters of every request: unchecked
    /// exclusivity, as `idle`.)
    @exclusivity(unchecked) public private(set) var openConnections = 0
    /// Connections held by calls (opening or exchanging): at most `endpoint.maxConnections`
    /// when every call waited its turn (`hasRoom`, `wait`).
    @exclusivity(unchecked) public private(set) var inUse = 0
    /// Requests waiting for a connection at the cap, oldest first (`UpstreamPendingQueue`).
    let pending: UpstreamPendingQueue
    /// HTTPS: the newest session the upstream gave, offered by the next connection.
    let sessionSlot: TLSSessionSlot?
    /// HTTPS: TLS handshakes completed, and how many of them resumed a session.
    public private(set) var tlsHandshakes = 0
    public private(set) var tlsResumedHandshakes = 0
    /// The last response from this upstream was HTTP/1.0: it will not send `100 Continue`,
    /// so a request's body is not held back waiting for one.
    var answersHTTP10 = false
    /// An HTTP/2 upstream's connections, open or opening, each carrying up to its
    /// concurrent-stream limit of calls (`inUse` counts the streams).
    var h2Connections: [UpstreamH2Connection] = []
    #if DEBUG
        private var thread: pthread_t?
    #endif

    public init(loop: EventLoop, endpoint: UpstreamEndpoint) {
        self.loop = loop
        self.endpoint = endpoint
        numericAddress = UpstreamAddress(numeric: endpoint.host, port: endpoint.port)
        sessionSlot = endpoint.tls == nil ? nil : TLSSessionSlot()
        pending = UpstreamPendingQueue(loop: loop, limit: endpoint.maxPending, timeout: endpoint.pendingTimeout)
    }

    deinit {
        for conn in idle { conn.close() }
        // Idle ones only (a call holds its pool): closed without a word back to this pool.
        for conn in h2Connections {
            conn.poolGone = true
            conn.close()
        }
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
        inUse += 1
        if !fresh, let conn = idle.popLast() {
            idleSince.removeLast()
            return conn
        }
        openConnections += 1
        return UpstreamConnection(pool: self)
    }

    /// Takes a connection back after an exchange: kept idle when `reusable` (past
    /// `maxIdle`, for `surplusGrace`), else closed.
    func release(_ conn: UpstreamConnection, reusable: Bool) {
        inUse -= 1
        if reusable && !conn.isClosed && endpoint.maxIdle > 0 && conn.becomeIdle() {
            idle.append(conn)
            idleSince.append(LazyDeadline.now())
            if idle.count > endpoint.maxIdle && surplusTimer == nil { armSurplusTimer(after: endpoint.surplusGrace) }
        } else {
            discard(conn)
        }
        pending.roomMade(self)
    }

    private func armSurplusTimer(after seconds: Double) {
        surplusTimer = LoopTimer(loop: loop, seconds: max(seconds, 0.01)) { [weak self] in self?.closeSurplus() }
    }

    /// Closes the idle connections past `maxIdle` that waited `surplusGrace` unused (the
    /// bottom of the stack); rearms for the rest of the surplus.
    private func closeSurplus() {
        surplusTimer = nil
        let now = LazyDeadline.now()
        var expired = 0
        while idle.count - expired > endpoint.maxIdle && idleSince[expired] + endpoint.surplusGrace <= now {
            expired += 1
        }
        let closing = idle[..<expired]
        idle.removeFirst(expired)
        idleSince.removeFirst(expired)
        for conn in closing { discard(conn) }
        if idle.count > endpoint.maxIdle { armSurplusTimer(after: idleSince[0] + endpoint.surplusGrace - now) }
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
        inUse -= 1
        pending.roomMade(self)
    }

    /// Whether a call started now gets a connection at once (an idle one, or a new one
    /// under the cap) without passing a request that waits.
    public var hasRoom: Bool { pending.isEmpty && roomForWaiter }

    /// Queues `waiter` for a connection at the cap: it is told `upstreamRoom()` in its turn
    /// (it must then start its call at once, or let the turn go), or `upstreamWaitExpired()`
    /// after `endpoint.pendingTimeout`. False: the queue is full (`endpoint.maxPending`).
    public func wait(_ waiter: UpstreamWaiter) -> Bool {
        assertOnLoop()
        return pending.add(waiter)
    }

    /// A waiter gives up its place (its client left).
    public func stopWaiting(_ waiter: UpstreamWaiter) {
        assertOnLoop()
        pending.remove(waiter)
        pending.roomMade(self)
    }

    /// Room for one more call (a connection freed, a waiter left).
    var roomForWaiter: Bool {
        guard endpoint.http2 else { return inUse < endpoint.maxConnections }
        return openConnections < endpoint.maxConnections || h2Connections.contains { $0.room > 0 }
    }

    /// An idle connection was closed by the upstream or got unexpected bytes.
    func idleConnectionLost(_ conn: UpstreamConnection) {
        guard let i = idle.firstIndex(where: { $0 === conn }) else { return }
        idle.remove(at: i)
        idleSince.remove(at: i)
        discard(conn)
    }

    /// Closes all idle connections (reload, shutdown).
    public func closeIdle() {
        assertOnLoop()
        let closing = idle
        idle.removeAll()
        idleSince.removeAll()
        surplusTimer = nil
        for conn in closing { discard(conn) }
        for conn in h2Connections where conn.isIdle && !conn.opening { conn.close() }
    }

    // MARK: HTTP/2

    /// The connection a new stream goes on: the busiest one with room (so idle ones can
    /// be let go), else a new one.
    func acquireH2() -> UpstreamH2Connection {
        inUse += 1
        var best: UpstreamH2Connection?
        for conn in h2Connections where conn.room > 0 {
            if best == nil || conn.streams.count + conn.waiting.count > best!.streams.count + best!.waiting.count {
                best = conn
            }
        }
        if let best { return best }
        let conn = UpstreamH2Connection(pool: self)
        openConnections += 1
        h2Connections.append(conn)
        conn.open()
        return conn
    }

    /// A stream ended on `conn`: room for a waiter; past `maxIdle` idle connections, this
    /// one, now idle, is closed.
    func h2StreamEnded(_ conn: UpstreamH2Connection) {
        inUse -= 1
        if conn.isIdle && !conn.opening && !conn.closed {
            let idleCount = h2Connections.count { $0.isIdle }
            if idleCount > endpoint.maxIdle || conn.room <= 0 { conn.close() }
        }
        pending.roomMade(self)
    }

    /// `conn` closed (failed, went away, or was let go).
    func h2Closed(_ conn: UpstreamH2Connection) {
        guard let i = h2Connections.firstIndex(where: { $0 === conn }) else { return }
        h2Connections.remove(at: i)
        openConnections -= 1
        pending.roomMade(self)
    }

    func handshakeDone(resumed: Bool) {
        tlsHandshakes += 1
        if resumed { tlsResumedHandshakes += 1 }
    }

    /// Idle keep-alive connections (tests, and the gateway's status page).
    public var idleCount: Int { idle.count }
}
