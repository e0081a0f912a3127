internal import CEvent

/// The upstream's side of a tunnel: the connection an `UpstreamCall` got its 101 on, taken
/// out of its pool (it will never carry a request again). What the upstream sent after
/// the 101 head is already in the transport's input. It reads with `UpstreamTransport.fill`
/// and writes with `flush`, so it works over whatever the transport runs on. Loop-thread
/// only; owns the connection and closes it.
final class UpstreamTunnelEndpoint: TunnelEndpoint, UpstreamTransportHandler {
    private let connection: UpstreamConnection
    private var transport: UpstreamTransport { connection.transport }
    /// Unowned: the tunnel clears it before it goes (`Tunnel.close`, `deinit`); no count per event.
    /// Unchecked exclusivity: read on every event, never accessed re-entrantly (a dynamic
    /// check here cost ~75 instructions per message).
    @exclusivity(unchecked) unowned(unsafe) var events: TunnelEndpointEvents?
    private(set) var failure: String?
    private var reading = false
    private var closed = false

    init(connection: UpstreamConnection) {
        self.connection = connection
        connection.transport.handler = self
        connection.transport.disarmRead()
        connection.transport.disarmWrite()
    }

    deinit { connection.close() }

    var input: OpaquePointer { transport.input }
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

    func send(from source: OpaquePointer, count: Int) {
        evbuffer_remove_buffer(source, transport.output, count)
        write()
    }

    func send(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = evbuffer_add(transport.output, $0.baseAddress, $0.count) }
        write()
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
