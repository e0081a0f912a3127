/// A tunnel side with no socket behind it, for tests of the tunnel and of the layers above:
/// the test plays the peer (`deliver`, `peerEnds`, `takeReceived`) and the socket's
/// capacity (`accepting`: how many more bytes the "socket" takes before it pushes back).
/// Loop-thread only, like a real side; needs no loop.
public final class InMemoryTunnelEndpoint: TunnelEndpoint {
    /// Unowned: the tunnel clears it before it goes (`Tunnel.close`, `deinit`); no count per event.
    public unowned(unsafe) var events: TunnelEndpointEvents?
    public let input = ByteQueue()
    private let output = ByteQueue()
    /// What the "socket" took, in order.
    public private(set) var received: [UInt8] = []
    /// Bytes the "socket" still takes; nil: no limit.
    public var accepting: Int?
    public private(set) var reading = false
    public private(set) var isClosed = false
    public var failure: String? { nil }

    public init() {}

    public var pendingOutput: Int { output.count }

    /// The peer sends `bytes`: they are appended to the input and, if reading, announced.
    /// Bytes given before the tunnel starts are the ones read ahead of it.
    public func deliver(_ bytes: [UInt8]) {
        input.append(bytes)
        if reading && !isClosed { events?.endpointReadable(self) }
    }

    public func peerEnds() { events?.endpointEnded(self) }
    public func fail() { events?.endpointFailed(self) }

    /// The "socket" takes `count` more bytes (backpressure eases).
    public func drain(allowing count: Int) {
        accepting = (accepting ?? 0) + count
        write()
    }

    /// What was received so far, cleared.
    public func takeReceived() -> [UInt8] {
        defer { received = [] }
        return received
    }

    public func setReading(_ want: Bool) { reading = want && !isClosed }

    public func send(from source: ByteQueue, count: Int) {
        source.move(count, to: output)
        write()
    }

    public func send(_ bytes: [UInt8]) {
        output.append(bytes)
        write()
    }

    /// Bytes come through `input` only (`deliver`).
    public func relayDirectly(_ on: Bool) -> Bool { false }
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelReceive { .wouldBlock }

    public func send(bytes: UnsafeRawBufferPointer) {
        output.append(bytes)
        write()
    }

    public func close() {
        isClosed = true
        reading = false
    }

    private func write() {
        guard !isClosed else { return }
        let n = min(pendingOutput, accepting ?? Int.max)
        guard n > 0 else { return }
        received += output.take(n)
        if let a = accepting { accepting = a - n }
        events?.endpointWrote(self)
    }
}
