internal import CEvent
internal import CShim
import Glibc

/// tokengate's own HTTP server on one loop, serving `ServerExchange`s: it accepts on
/// listening sockets (a persistent read event each, `accept4` until EAGAIN) and runs each
/// connection as an `ServerConnection` with an `HTTP1ConnectionHandler` on it, over
/// plain TCP or, given a `TLSContext`, over TLS (`TLSConnectionIO`, one SSL object per
/// connection, the handshake inside the header deadline). With HTTP/2 on (a TLS context
/// that offers `h2` in ALPN, or `http2` on a plain server) a `ProtocolSelector` comes
/// first and hands each connection to the HTTP/1.1 or the HTTP/2 handler
/// (`HTTP2ConnectionHandler`).
///
/// Open connections are bounded by a `ConnectionBudget` (`maxConnections`), shared by
/// every server of a process. At the limit the server reclaims, as nginx does when its
/// `worker_connections` run out: it accepts the new client and closes its own connection
/// idle the longest (`IdleConnectionList`: no byte of a request head yet, or keep-alive
/// between requests), handing that slot over, so a new client is not kept waiting by
/// sockets that say nothing. A connection inside a request, closing, or turned into a
/// tunnel is never reclaimed. With nothing idle of its own it asks another server of the
/// budget to reclaim, and stops accepting until a slot frees (`acceptPauses`). Owns its
/// listening sockets and their events, and closes every connection when it goes.
/// Loop-thread only, except `init` and `serve`, which may run anywhere before the loop
/// starts.
public final class HTTPServer: ExchangeServer {
    private let loop: EventLoop
    private let tls: TLSContext?
    /// Connections may speak HTTP/2 (ALPN over TLS, prior knowledge over plain TCP).
    private let http2: Bool
    private let context: ServerContext
    private var listeners: [(fd: Int32, event: OpaquePointer)] = []
    private var connections: [ObjectIdentifier: ServerConnection] = [:]
    private var acceptPaused = false
    private var thread = LoopThread()
    private let budget: ConnectionBudget
    /// This server as its budget's other servers reach it (`reclaimForPeer`).
    private var peer: ConnectionBudget.Peer?
    /// Accepting stopped at the budget's limit with nothing idle to reclaim; a retry is
    /// scheduled (one wait counts as one pause, however many retries it takes).
    private var waitingForSlot = false
    private var retryScheduled = false
    /// How many times accepting paused at `maxConnections` (or at the process's fd limit).
    public private(set) var acceptPauses = 0
    /// Idle connections closed to make room at `maxConnections`.
    public private(set) var reclaimedConnections = 0
    /// Called on the loop after each reclaim (the gateway logs it).
    public var onReclaim: (() -> Void)?

    /// How soon a server waiting for a slot looks again: a slot freed on another worker's
    /// loop does not announce itself on this one.
    static let slotRetrySeconds = 0.02

    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// `tls`: every connection accepted on this server's sockets speaks TLS (1.2 or later);
    /// HTTP/2 is served if the context offers it in ALPN. `http2`: a plain server also
    /// serves HTTP/2 with prior knowledge (RFC 9113 §3.3) next to HTTP/1.1. `budget`: shared with the process's other servers (its limit is set from
    /// `options.maxConnections`, which they must agree on); by default one of its own.
    public init(
        loop: EventLoop, options: HTTPServerOptions, tls: TLSContext?, http2: Bool = false,
        budget: ConnectionBudget? = nil, handler: @escaping (ServerExchange) -> Void
    ) {
        // A write to a socket the peer reset raises SIGPIPE, which would end the process.
        _ = Self.ignoreSIGPIPE
        self.loop = loop
        self.tls = tls
        self.http2 = tls?.http2 ?? http2
        context = ServerContext(options: options, handler: handler)
        self.budget = budget ?? ConnectionBudget(limit: options.maxConnections)
        self.budget.limit = options.maxConnections
        let peer = ConnectionBudget.Peer(loop: loop, server: self)
        self.peer = peer
        self.budget.join(peer)
    }

    deinit {
        if let peer { budget.leave(peer) }
        for listener in listeners {
            event_free(listener.event)
            close(listener.fd)
        }
        // Closing the connections below must not re-arm the freed listening events.
        listeners.removeAll()
        for connection in Array(connections.values) { connection.close() }
    }

    public func serve(listeningSocket fd: Int32) throws {
        thread.check()
        guard fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else {
            close(fd)
            throw ReactorError("fcntl(O_NONBLOCK) failed: \(String(cString: strerror(errno)))")
        }
        // Unretained: the server outlives its listening events (freed in stopAccepting/deinit).
        guard
            let event = event_new(
                loop.base, fd, Int16(EV_READ | EV_PERSIST), acceptThunk,
                Unmanaged.passUnretained(self).toOpaque())
        else {
            close(fd)
            throw ReactorError("event_new failed for a listening socket")
        }
        listeners.append((fd, event))
        if !acceptPaused { event_add(event, nil) }
    }

    /// Also sends every HTTP/2 client GOAWAY (RFC 9113 §6.8): the streams it has open are
    /// served, new ones go to another connection.
    public func stopAccepting() {
        thread.check()
        for listener in listeners {
            event_free(listener.event)
            close(listener.fd)
        }
        listeners.removeAll()
        for connection in Array(connections.values) {
            (connection.handler as? HTTP2ConnectionHandler)?.goAway()
        }
    }

    public func apply(_ options: HTTPServerOptions) {
        thread.check()
        context.options = options
        budget.limit = options.maxConnections
        if acceptPaused && budget.hasRoom { resumeAccepting() }
    }

    public var openConnections: Int { connections.count }

    /// Connections that may be reclaimed now (idle, oldest first).
    var idleConnections: Int { context.idle.count }

    fileprivate func acceptReady(_ fd: Int32) {
        thread.bindIfUnbound()
        thread.check()
        // The listening socket was reported readable: a client is waiting for this accept.
        var clientWaiting = true
        while !acceptPaused {
            if !budget.tryAcquire() {
                if context.idle.isEmpty {
                    waitForSlot()
                    return
                }
                // At the limit, one reclaim per readiness report, and only when a client is
                // known to wait (the first accept of the report), so that no idle connection
                // is closed for nobody. Closed before the accept, its slot handed over: the
                // process never holds more client sockets than the limit, not even for a
                // moment. Level-triggered readiness brings the next waiting client next turn
                // (nginx, without multi_accept, also accepts one client per event).
                guard clientWaiting else { return }
                reclaimOldestIdle(handingSlotOver: true)
            }
            clientWaiting = false
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    tg_accept_nonblocking(fd, $0, &length)
                }
            }
            if client < 0 {
                budget.release()
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE:
                    // Out of descriptors: stop for a moment rather than spin on a ready socket.
                    pauseAccepting()
                    loop.schedule(after: 0.1) { [weak self] in self?.resumeAccepting() }
                    return
                default: return  // EAGAIN: all accepted
                }
            }
            waitingForSlot = false
            open(client, address)
        }
    }

    /// Closes the connection idle the longest. `handingSlotOver`: its slot goes to the
    /// client about to be accepted instead of back to the budget, so that another worker
    /// cannot take it in between.
    @discardableResult
    private func reclaimOldestIdle(handingSlotOver: Bool) -> Bool {
        guard let victim = context.idle.popOldest() else { return false }
        reclaimedConnections += 1
        if handingSlotOver { connections.removeValue(forKey: ObjectIdentifier(victim)) }
        victim.close()
        onReclaim?()
        return true
    }

    /// Another server of the budget is at the limit with nothing idle of its own.
    func reclaimForPeer() {
        thread.check()
        reclaimOldestIdle(handingSlotOver: false)
    }

    /// At the limit with nothing idle here: stop accepting, ask another server to free a
    /// slot, and look again shortly.
    private func waitForSlot() {
        if !waitingForSlot {
            waitingForSlot = true
            acceptPauses += 1
        }
        pauseAccepting(counted: false)
        if let peer { budget.askPeerToReclaim(except: peer) }
        guard !retryScheduled else { return }
        retryScheduled = true
        loop.schedule(after: Self.slotRetrySeconds) { [weak self] in
            guard let self else { return }
            retryScheduled = false
            if waitingForSlot && acceptPaused { resumeAccepting() }
        }
    }

    private func open(_ fd: Int32, _ address: sockaddr_storage) {
        var one: Int32 = 1
        // Small responses must not wait for Nagle's algorithm.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let io: ConnectionIO
        if let tls {
            do {
                io = try TLSConnectionIO(context: tls, fd: fd)
            } catch {
                // Out of memory in OpenSSL: this client goes, the listener stays.
                close(fd)
                budget.release()
                return
            }
        } else {
            io = PlainConnectionIO(fd: fd)
        }
        let info = ClientConnection(peer: Self.numericHost(address), isTLS: tls != nil)
        info.tls = io as? TLSConnectionIO
        let connection = ServerConnection(base: loop.base, fd: fd, io: io, info: info)
        guard !connection.isClosed else {
            budget.release()
            return
        }
        connections[ObjectIdentifier(connection)] = connection
        connection.onClose = { [weak self] in self?.closed($0) }
        connection.handler =
            http2
            ? ProtocolSelector(connection: connection, context: context)
            : HTTP1ConnectionHandler(connection: connection, context: context)
    }

    private func closed(_ connection: ServerConnection) {
        context.idle.remove(connection)
        // A reclaimed connection was taken out of the table first: its slot went to the
        // client that replaced it.
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        budget.release()
        if acceptPaused && budget.hasRoom { resumeAccepting() }
    }

    private func pauseAccepting(counted: Bool = true) {
        guard !acceptPaused else { return }
        acceptPaused = true
        if counted { acceptPauses += 1 }
        for listener in listeners { event_del(listener.event) }
    }

    private func resumeAccepting() {
        guard acceptPaused else { return }
        acceptPaused = false
        for listener in listeners { event_add(listener.event, nil) }
    }

    /// The peer's numeric address (what X-Forwarded-For trust uses).
    static func numericHost(_ address: sockaddr_storage) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let capacity = socklen_t(text.count)
        let family = Int32(address.ss_family)
        let ok: Bool = withUnsafeBytes(of: address) { raw in
            switch family {
            case AF_INET:
                var a = raw.load(as: sockaddr_in.self).sin_addr
                return inet_ntop(AF_INET, &a, &text, capacity) != nil
            case AF_INET6:
                var a = raw.load(as: sockaddr_in6.self).sin6_addr
                return inet_ntop(AF_INET6, &a, &text, capacity) != nil
            default:
                return false
            }
        }
        return ok ? String(nulTerminated: text) : ""
    }
}

private func acceptThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<HTTPServer>.fromOpaque(arg!).takeUnretainedValue().acceptReady(fd)
}
