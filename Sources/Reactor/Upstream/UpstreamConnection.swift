import Glibc

/// One keep-alive connection to an upstream: its transport, how it is opened (the loop's
/// resolver for a name, then each address in turn until one accepts, then for an HTTPS
/// upstream the TLS handshake, driven by socket readiness), and what it does
/// while idle in the pool — it watches for reads, and anything (EOF, an error, bytes no
/// request asked for) makes the pool drop it, so it is never reused.
///
/// The transport's handler is this connection while opening and while idle, and the
/// `UpstreamCall` using it in between. Loop-thread only; `close()` is idempotent.
final class UpstreamConnection: UpstreamTransportHandler {
    let transport: UpstreamTransport
    /// Unowned, not weak (a weak reference would move every count of the pool to the
    /// runtime's slow path): a connection is used through its pool, by a call that holds the
    /// pool, or sits idle in it; one a tunnel took over no longer touches it.
    private unowned let pool: UpstreamPool
    /// Exchanges finished on it; > 0 means a reused keep-alive connection.
    var served = 0
    /// The responses on this connection, one exchange after another: kept with the
    /// connection, so a keep-alive exchange sets none up. Unchecked exclusivity: a pure state
    /// machine mutated only inside its own calls, which call out to nothing.
    @exclusivity(unchecked) var parser: HTTP1ResponseParser
    private var lookup: UpstreamLookup?
    private var addresses: ArraySlice<UpstreamAddress> = []
    private var opened: ((Bool) -> Void)?
    /// The TLS handshake runs: readiness goes to it.
    private var handshaking = false
    /// Why the open failed, when there is more to say than "no address answered" (a TLS
    /// handshake's verify error): for the log, never the client.
    private(set) var openFailure: String?

    init(pool: UpstreamPool) {
        self.pool = pool
        transport = UpstreamTransport(loop: pool.loop)
        parser = HTTP1ResponseParser(limits: pool.limits)
    }

    deinit { close() }

    /// Connected and not closed: ready for a request.
    var isOpen: Bool { transport.isConnected && !transport.isClosed }

    /// Resolves (unless numeric) and connects; `done(true)` once connected, `done(false)`
    /// when every address failed or the name did not resolve. Not called after `close()`;
    /// may be called before this returns.
    func open(_ done: @escaping (Bool) -> Void) {
        opened = done
        transport.handler = self
        if let numeric = pool.numericAddress {
            addresses = [numeric]
            connectNext()
            return
        }
        lookup = UpstreamLookup.start(loop: pool.loop, host: pool.endpoint.host, port: pool.endpoint.port) {
            [weak self] found in
            guard let self else { return }
            self.lookup = nil
            self.addresses = found[...]
            self.connectNext()
        }
        if lookup == nil && opened != nil && addresses.isEmpty { finishOpen(false) }
    }

    private func connectNext() {
        while let address = addresses.popFirst() {
            switch transport.connect(to: address) {
            case .connected:
                connected()
                return
            case .inProgress:
                return
            case .failed:
                transport.dropSocket()
            }
        }
        finishOpen(false)
    }

    private func finishOpen(_ ok: Bool) {
        guard let done = opened else { return }
        opened = nil
        done(ok)
    }

    /// TCP is up: done for http, the handshake for https.
    private func connected() {
        guard let tls = pool.endpoint.tls, let slot = pool.sessionSlot else {
            finishOpen(true)
            return
        }
        do {
            try transport.startTLS(tls, slot: slot)
        } catch {
            openFailure = error.description
            finishOpen(false)
            return
        }
        handshaking = true
        continueHandshake()
    }

    /// One handshake step; the connect deadline (the call's) bounds the whole handshake.
    private func continueHandshake() {
        switch transport.handshake() {
        case .done(let resumed):
            if pool.endpoint.http2, transport.tls?.negotiatedH2 != true {
                // RFC 9113 §3.2: over TLS, HTTP/2 is what ALPN agreed on, or nothing.
                failHandshake("the upstream did not choose h2 in ALPN")
                return
            }
            handshaking = false
            transport.disarmRead()
            transport.disarmWrite()
            pool.handshakeDone(resumed: resumed)
            finishOpen(true)
        case .wantsReadable:
            transport.disarmWrite()
            if !transport.armRead(timeout: nil) { failHandshake("cannot register read interest") }
        case .wantsWritable:
            if !transport.armWrite(timeout: nil) { failHandshake("cannot register write interest") }
        case .failed(let reason):
            failHandshake(reason)
        }
    }

    private func failHandshake(_ reason: String) {
        handshaking = false
        openFailure = "TLS handshake with \(pool.endpoint.tls?.serverName ?? "?"): \(reason)"
        finishOpen(false)
    }

    func transportConnected(_ transport: UpstreamTransport, error: Int32) {
        if error == 0 {
            connected()
        } else {
            // Refused or unreachable: the next address the resolver gave, if any (a name
            // that maps to ::1 and 127.0.0.1 with the upstream on one of them).
            transport.dropSocket()
            connectNext()
        }
    }

    /// Idle in the pool: only the upstream closing it (or sending what nobody asked for)
    /// reaches here.
    /// False if read interest could not be registered (the pool then closes it).
    func becomeIdle() -> Bool {
        // Bytes after a complete response belong to no request. On a plain socket they
        // wake the idle watch below; decrypted ones waiting inside OpenSSL would not, and
        // would be read as the next request's response.
        if transport.tls?.holdsInput == true { return false }
        transport.handler = self
        transport.disarmWrite()
        return transport.armRead(timeout: nil)
    }

    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool) {
        if handshaking {
            continueHandshake()
            return
        }
        // Over TLS, a session ticket (RFC 8446 §4.6.1) read while idle is no application
        // data: `fill` reports it as wouldBlock.
        if case .wouldBlock = transport.fill() { return }
        pool.idleConnectionLost(self)
    }

    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool) {
        if handshaking { continueHandshake() }
    }

    /// Closes the socket and abandons an open in progress; no callback follows.
    func close() {
        opened = nil
        handshaking = false
        lookup?.cancel()
        lookup = nil
        transport.close()
    }

    var isClosed: Bool { transport.isClosed }
}
