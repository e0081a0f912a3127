internal import CEvent
internal import CShim
import Glibc

/// tokengate's own HTTP/1.1 server on one loop, serving `ServerExchange`s: it accepts on
/// listening sockets (a persistent read event each, `accept4` until EAGAIN) and runs each
/// connection as an `HTTP1ServerConnection` with an `HTTP1ConnectionHandler` on it, over
/// plain TCP or, given a `TLSContext`, over TLS (`TLSConnectionIO`, one SSL object per
/// connection, the handshake inside the header deadline). At
/// `maxConnections` open connections it stops accepting until one closes (`acceptPauses`
/// counts how often). Owns its listening sockets and their events, and closes every
/// connection when it goes. Loop-thread only, except `init` and `serve`, which may run
/// anywhere before the loop starts.
public final class HTTP1Server: ExchangeServer {
    private let loop: EventLoop
    private let tls: TLSContext?
    private let context: HTTP1ServerContext
    private var listeners: [(fd: Int32, event: OpaquePointer)] = []
    private var connections: [ObjectIdentifier: HTTP1ServerConnection] = [:]
    private var acceptPaused = false
    private var thread = LoopThread()
    /// How many times accepting paused at `maxConnections` (or at the process's fd limit).
    public private(set) var acceptPauses = 0

    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// `tls`: every connection accepted on this server's sockets speaks TLS (1.2 or later).
    public init(
        loop: EventLoop, options: HTTPServerOptions, tls: TLSContext?,
        handler: @escaping (ServerExchange) -> Void
    ) {
        // A write to a socket the peer reset raises SIGPIPE, which would end the process.
        _ = Self.ignoreSIGPIPE
        self.loop = loop
        self.tls = tls
        context = HTTP1ServerContext(options: options, handler: handler)
    }

    deinit {
        for listener in listeners {
            event_free(listener.event)
            close(listener.fd)
        }
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

    public func stopAccepting() {
        thread.check()
        for listener in listeners {
            event_free(listener.event)
            close(listener.fd)
        }
        listeners.removeAll()
    }

    public func apply(_ options: HTTPServerOptions) {
        thread.check()
        context.options = options
        if acceptPaused && connections.count < options.maxConnections { resumeAccepting() }
    }

    public var openConnections: Int { connections.count }

    fileprivate func acceptReady(_ fd: Int32) {
        thread.bindIfUnbound()
        thread.check()
        while !acceptPaused {
            guard connections.count < context.options.maxConnections else {
                pauseAccepting()
                return
            }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    tg_accept_nonblocking(fd, $0, &length)
                }
            }
            if client < 0 {
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
            open(client, address)
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
                return
            }
        } else {
            io = PlainConnectionIO(fd: fd)
        }
        let info = ClientConnection(peer: Self.numericHost(address), isTLS: tls != nil)
        let connection = HTTP1ServerConnection(base: loop.base, fd: fd, io: io, info: info)
        guard !connection.isClosed else { return }
        connections[ObjectIdentifier(connection)] = connection
        connection.onClose = { [weak self] in self?.closed($0) }
        connection.handler = HTTP1ConnectionHandler(connection: connection, context: context)
    }

    private func closed(_ connection: HTTP1ServerConnection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
        if acceptPaused && connections.count < context.options.maxConnections { resumeAccepting() }
    }

    private func pauseAccepting() {
        guard !acceptPaused else { return }
        acceptPaused = true
        acceptPauses += 1
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
        return ok ? String(cString: text) : ""
    }
}

private func acceptThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<HTTP1Server>.fromOpaque(arg!).takeUnretainedValue().acceptReady(fd)
}
