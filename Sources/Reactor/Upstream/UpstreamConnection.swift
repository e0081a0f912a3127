import Glibc

/// One keep-alive connection to an upstream: its transport, how it is opened (the loop's
/// resolver for a name, then each address in turn until one accepts), and what it does
/// while idle in the pool — it watches for reads, and anything (EOF, an error, bytes no
/// request asked for) makes the pool drop it, so it is never reused.
///
/// The transport's handler is this connection while opening and while idle, and the
/// `UpstreamCall` using it in between. Loop-thread only; `close()` is idempotent.
final class UpstreamConnection: UpstreamTransportHandler {
    let transport: UpstreamTransport
    private weak var pool: UpstreamPool?
    /// Exchanges finished on it; > 0 means a reused keep-alive connection.
    var served = 0
    private var lookup: UpstreamLookup?
    private var addresses: ArraySlice<UpstreamAddress> = []
    private var opened: ((Bool) -> Void)?

    init(pool: UpstreamPool) {
        self.pool = pool
        transport = UpstreamTransport(loop: pool.loop)
    }

    deinit { close() }

    /// Connected and not closed: ready for a request.
    var isOpen: Bool { transport.isConnected && !transport.isClosed }

    /// Resolves (unless numeric) and connects; `done(true)` once connected, `done(false)`
    /// when every address failed or the name did not resolve. Not called after `close()`;
    /// may be called before this returns.
    func open(_ done: @escaping (Bool) -> Void) {
        guard let pool else { done(false); return }
        opened = done
        transport.handler = self
        if let numeric = pool.numericAddress {
            addresses = [numeric]
            connectNext()
            return
        }
        lookup = UpstreamLookup.start(loop: pool.loop, host: pool.endpoint.host, port: pool.endpoint.port) { [weak self] found in
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
                finishOpen(true)
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

    func transportConnected(_ transport: UpstreamTransport, error: Int32) {
        if error == 0 {
            finishOpen(true)
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
        transport.handler = self
        transport.disarmWrite()
        return transport.armRead(timeout: nil)
    }

    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool) {
        if case .wouldBlock = transport.fill() { return }
        pool?.idleConnectionLost(self)
    }

    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool) {}

    /// Closes the socket and abandons an open in progress; no callback follows.
    func close() {
        opened = nil
        lookup?.cancel()
        lookup = nil
        transport.close()
    }

    var isClosed: Bool { transport.isClosed }
}
