/// The upstream's side of a tunnel: the connection an `UpstreamCall` got its 101 on, taken
/// out of its pool (it will never carry a request again). What the upstream sent after
/// the 101 head is already in the transport's input. It reads with `UpstreamTransport.fill`
/// and writes with `flush`, so it works over whatever the transport runs on. Loop-thread
/// only; owns the connection and closes it.
final class UpstreamTunnelEndpoint: TunnelEndpoint, UpstreamTransportHandler {
    private let connection: UpstreamConnection
    /// The connection's transport, held directly: no load and count through the connection per call.
    private let transport: UpstreamTransport
    /// Unowned: the tunnel clears it before it goes (`Tunnel.close`, `deinit`); no count per event.
    /// Unchecked exclusivity: read on every event, never accessed re-entrantly (a dynamic
    /// check here cost ~75 instructions per message).
    @exclusivity(unchecked) unowned(unsafe) var events: TunnelEndpointEvents?
    private(set) var failure: String?
    private var reading = false
    private var closed = false
    /// Direct relay: readiness goes to the tunnel unread (`receive(into:)` reads).
    private var direct = false

    init(connection: UpstreamConnection) {
        self.connection = connection
        transport = connection.transport
        // The owner, not the weak handler: this side owns the connection and closes it.
        connection.transport.handler = nil
        connection.transport.owner = self
        connection.transport.disarmRead()
        connection.transport.disarmWrite()
    }

    deinit { connection.close() }

    var input: ByteQueue { transport.input }
    var pendingOutput: Int { transport.pendingOutput }

    func setReading(_ want: Bool) {
        guard !closed, want != reading else { return }
        reading = want
        if want {
            if !transport.armRead(timeout: nil) { fail("read interest refused") }
        } else {
            transport.disarmRead()
        }
    }

    func send(from source: ByteQueue, count: Int) {
        source.move(count, to: transport.output)
        write()
    }

    func send(_ bytes: [UInt8]) {
        transport.output.append(bytes)
        write()
    }

    func relayDirectly(_ on: Bool) -> Bool {
        guard !on || (!closed && transport.tls == nil) else { return false }
        direct = on
        return true
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelReceive {
        guard !closed else { return .wouldBlock }
        switch transport.receive(into: buffer) {
        case .bytes(let n): return .bytes(n)
        case .wouldBlock: return .wouldBlock
        case .eof:
            reading = false
            transport.disarmRead()
            return .ended
        case .failed(let code):
            failure = "read: errno \(code)"
            return .failed
        }
    }

    func send(bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        if case .failed(let code) = transport.send(bytes, timeout: nil) { fail("write: errno \(code)") }
    }

    private func write() {
        guard !closed else { return }
        let before = transport.pendingOutput
        switch transport.flush(timeout: nil) {
        case .done, .pending:
            if transport.pendingOutput < before { events?.endpointWrote(self) }
        case .failed(let code):
            fail("write: errno \(code)")
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        connection.close()
    }

    private func fail(_ why: String) {
        guard !closed else { return }
        failure = why
        close()
        events?.endpointFailed(self)
    }

    // MARK: UpstreamTransportHandler

    func transportConnected(_ transport: UpstreamTransport, error: Int32) {}

    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool) {
        guard !closed, reading else { return }
        if direct {
            events?.endpointReadable(self)
            return
        }
        switch transport.fill() {
        case .bytes: events?.endpointReadable(self)
        case .wouldBlock: break
        case .eof:
            reading = false
            transport.disarmRead()
            events?.endpointEnded(self)
        case .failed(let code): fail("read: errno \(code)")
        }
    }

    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool) { write() }
}
