internal import CEvent
internal import CShim
import Glibc

/// What a `RedisConnection` reports, on the loop thread, each at most once except replies.
protocol RedisConnectionDelegate: AnyObject {
    /// TCP is up (and for TLS the TLS handshake done); ready for AUTH and SELECT.
    func redisConnectionDidConnect(_ connection: RedisConnection)
    /// One parsed reply, in the order the server sent them.
    func redisConnection(_ connection: RedisConnection, didReceive reply: RedisReply)
    /// The connection failed and is already closed; nothing follows.
    func redisConnection(_ connection: RedisConnection, didFail error: RedisError)
}

/// One connection to a Redis server: a libevent `bufferevent` socket carrying RESP, parsed
/// by hiredis' reader (hiredis' own socket layer has no TLS). For a `rediss://` endpoint the
/// bufferevent is an OpenSSL one that runs the TLS handshake, checking the certificate, right
/// after the TCP connect. Transport only — what to send, when to reconnect and what a failure
/// means for pending commands is `RedisClient`'s policy. Owns the bufferevent (and with it
/// the socket and the `SSL` object) and the reader; `close()` frees them, once. Loop-thread
/// only.
final class RedisConnection {
    weak var delegate: RedisConnectionDelegate?
    let endpoint: RedisEndpoint
    private let loop: EventLoop
    /// The `rediss://` context, shared by the client's connections; nil for plain TCP.
    private let tls: TLSClientContext?
    private var bev: OpaquePointer?
    /// A view of `bev`'s input, which the bufferevent owns; dropped with it.
    private var input: ByteQueue?
    private var reader: RedisReader?
    /// libevent's reference to this connection while the bufferevent exists (see `connect`).
    private var callbackContext: Unmanaged<RedisConnection>?

    /// `tls` is required when the endpoint has TLS options, and ignored otherwise.
    init(loop: EventLoop, endpoint: RedisEndpoint, tls: TLSClientContext? = nil) {
        self.loop = loop
        self.endpoint = endpoint
        self.tls = endpoint.tls == nil ? nil : tls
    }

    deinit { close() }

    /// Starts the TCP connect (then the TLS handshake); the outcome arrives through the
    /// delegate. Numeric addresses connect directly; names go through the loop's asynchronous
    /// resolver, never a blocking getaddrinfo on the worker. A failure may reach the delegate
    /// before this returns (libevent reports an immediate connect error, or a name /etc/hosts
    /// cannot give, at once).
    func connect() throws(RedisError) {
        precondition(bev == nil && callbackContext == nil, "a RedisConnection connects once")
        reader = try RedisReader()
        let bev = try makeBufferEvent()
        self.bev = bev
        input = ByteQueue(borrowing: bufferevent_get_input(bev))
        // Retained for libevent's callbacks; released by `close()` right after
        // bufferevent_free has cleared them, so no callback can reach a freed connection.
        let context = Unmanaged.passRetained(self)
        callbackContext = context
        bufferevent_setcb(bev, readThunk, nil, eventThunk, context.toOpaque())
        guard bufferevent_enable(bev, Int16(EV_READ | EV_WRITE)) == 0 else {
            close()
            throw RedisError(.unavailable, "\(endpoint.address): bufferevent_enable failed")
        }
        let rc: Int32
        if let numeric = numericAddress() {
            var address = numeric.address
            rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bufferevent_socket_connect(bev, $0, numeric.length)
                }
            }
        } else {
            guard let dns = loop.dnsBase else {
                close()
                throw RedisError(.unavailable, "\(endpoint.address): no DNS resolver (evdns_base_new failed)")
            }
            rc = bufferevent_socket_connect_hostname(bev, dns, AF_UNSPEC, endpoint.host, Int32(endpoint.port))
        }
        guard rc == 0 else {
            // An immediate failure (no socket, unreachable network) has already been reported
            // through the delegate, which closed this connection.
            guard self.bev != nil else { return }
            let why = String(cString: strerror(errno))
            close()
            throw RedisError(.unavailable, "\(endpoint.address): connect failed: \(why)")
        }
    }

    private func makeBufferEvent() throws(RedisError) -> OpaquePointer {
        guard let options = endpoint.tls else {
            guard let bev = bufferevent_socket_new(loop.base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
                throw RedisError(.unavailable, "\(endpoint.address): bufferevent_socket_new failed")
            }
            return bev
        }
        guard let tls else { throw RedisError(.unavailable, "\(endpoint.address): TLS endpoint without a TLS context") }
        var err = [CChar](repeating: 0, count: 512)
        guard
            let bev = tg_tls_connecting_bufferevent(
                loop.base, tls.ctx, options.serverName ?? endpoint.host,
                options.insecureSkipTLSVerify ? 0 : 1, &err, err.count)
        else {
            throw RedisError(.unavailable, "\(endpoint.address): TLS: \(String(nulTerminated: err))")
        }
        return bev
    }

    /// Queues bytes for the socket (sent once connected); false if closed or out of memory.
    func write(_ bytes: [UInt8]) -> Bool {
        guard let bev else { return false }
        return bytes.withUnsafeBytes { bufferevent_write(bev, $0.baseAddress, $0.count) } == 0
    }

    /// Frees the bufferevent (closing the socket) and the reader; idempotent, no delegate call.
    func close() {
        input = nil
        if let bev {
            bufferevent_free(bev)
            self.bev = nil
        }
        reader = nil
        if let context = callbackContext {
            callbackContext = nil
            context.release()
        }
    }

    /// The endpoint's host as a socket address when it is an IPv4 or IPv6 literal.
    private func numericAddress() -> (address: sockaddr_storage, length: Int32)? {
        let literal =
            endpoint.host.contains(":") ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { evutil_parse_sockaddr_port(literal, $0, &length) }
        }
        return rc == 0 ? (storage, length) : nil
    }

    fileprivate func readable() {
        guard bev != nil, let input, let reader else { return }
        do throws(RedisError) {
            // Every contiguous piece of the input goes to the reader, then the input is drained.
            let total = input.count
            try input.forEachPiece(in: 0..<total) { piece throws(RedisError) in
                try reader.feed(piece)
                return true
            }
            input.drain(total)
            while let reply = try reader.next() {
                delegate?.redisConnection(self, didReceive: reply)
                // The delegate may have closed this connection (or its owner may be gone).
                guard self.bev != nil else { return }
            }
        } catch {
            fail(RedisError(error.kind, "\(endpoint.address): \(error.message)"))
        }
    }

    fileprivate func event(_ what: Int16) {
        guard let bev else { return }
        if what & Int16(BEV_EVENT_CONNECTED) != 0 {
            if !setNoDelay(bufferevent_getfd(bev)) {
                fail(
                    RedisError(
                        .unavailable,
                        "\(endpoint.address): setsockopt(TCP_NODELAY) failed: \(String(cString: strerror(errno)))"))
                return
            }
            delegate?.redisConnectionDidConnect(self)
        } else if what & Int16(BEV_EVENT_EOF) != 0 {
            fail(RedisError(.unavailable, "\(endpoint.address): connection closed by the server"))
        } else if what & Int16(BEV_EVENT_ERROR) != 0 {
            // errno first: the TLS description below may make library calls that change it.
            let socketError = String(cString: strerror(errno))
            let dnsError = bufferevent_socket_get_dns_error(bev)
            let why =
                dnsError != 0
                ? "cannot resolve \(endpoint.host): \(String(cString: evutil_gai_strerror(dnsError)))"
                : tlsFailure(bev) ?? socketError
            fail(RedisError(.unavailable, "\(endpoint.address): \(why)"))
        }
    }

    /// What OpenSSL says went wrong (a certificate refused, a handshake failed), or nil for a
    /// plain socket error.
    private func tlsFailure(_ bev: OpaquePointer) -> String? {
        guard tls != nil else { return nil }
        var text = [CChar](repeating: 0, count: 512)
        tg_tls_describe_failure(bev, &text, text.count)
        return text[0] == 0 ? nil : "TLS: \(String(nulTerminated: text))"
    }

    /// Small pipelined commands must not wait for Nagle's algorithm (hiredis sets it too).
    private func setNoDelay(_ fd: Int32) -> Bool {
        var one: Int32 = 1
        return setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    private func fail(_ error: RedisError) {
        close()
        delegate?.redisConnection(self, didFail: error)
    }
}

private func connection(_ arg: UnsafeMutableRawPointer?) -> RedisConnection {
    Unmanaged<RedisConnection>.fromOpaque(arg!).takeUnretainedValue()
}

private func readThunk(_ bev: OpaquePointer?, _ arg: UnsafeMutableRawPointer?) {
    connection(arg).readable()
}

private func eventThunk(_ bev: OpaquePointer?, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    connection(arg).event(what)
}
