/// The client's side of a tunnel: its HTTP/1.1 connection (plain or TLS, through the
/// connection's `ConnectionIO`) after the 101 went into its output. It takes the HTTP
/// handler's place as the connection's `ServerConnectionHandler`, so the socket, its
/// events and its buffers stay where they are and what the client sent after its request
/// head is the tunnel's first input. Loop-thread only.
final class ClientTunnelEndpoint: TunnelEndpoint, ServerConnectionHandler {
    private let connection: ServerConnection
    /// Unowned: the tunnel clears it before it goes (`Tunnel.close`, `deinit`); no count per event.
    /// Unchecked exclusivity: read on every event, never accessed re-entrantly (a dynamic
    /// check here cost ~75 instructions per message).
    @exclusivity(unchecked) unowned(unsafe) var events: TunnelEndpointEvents?
    private var closing = false

    init(connection: ServerConnection) {
        self.connection = connection
        connection.setDeadline(nil)
        // No deadline from here on: a reset must be seen when it comes (`EdgeTriggered`).
        connection.watchByLevel()
    }

    var input: ByteQueue { connection.input }
    var pendingOutput: Int { connection.output.count }
    var failure: String? { connection.failure }

    func setReading(_ want: Bool) { connection.setReading(want) }

    func send(from source: ByteQueue, count: Int) {
        source.move(count, to: connection.output)
        connection.flush()
    }

    func send(_ bytes: [UInt8]) {
        connection.output.append(bytes)
        connection.flush()
    }

    func relayDirectly(_ on: Bool) -> Bool { connection.relayDirectly(on) }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelReceive {
        let read = connection.receive(into: buffer)
        if read.bytes > 0 { return .bytes(read.bytes) }
        switch read.stop {
        case .end: return .ended
        case .failed: return .failed
        case .open, .buffered, .needsWritable: return .wouldBlock
        }
    }

    func send(bytes: UnsafeRawBufferPointer) { connection.send(bytes) }

    func close() {
        closing = true
        connection.close()
    }

    // MARK: ServerConnectionHandler

    func connectionReadable(_ connection: ServerConnection) { events?.endpointReadable(self) }
    func connectionPeerClosed(_ connection: ServerConnection) { events?.endpointEnded(self) }
    func connectionWrote(_ connection: ServerConnection) { events?.endpointWrote(self) }
    /// The tunnel keeps its own idle time; the connection's deadline is not used.
    func connectionDeadline(_ connection: ServerConnection) {}

    func connectionClosed(_ connection: ServerConnection) {
        guard !closing else { return }
        closing = true
        events?.endpointFailed(self)
    }
}
