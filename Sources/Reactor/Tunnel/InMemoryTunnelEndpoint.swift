internal import CEvent

/// A tunnel side with no socket behind it, for tests of the tunnel and of the layers above:
/// the test plays the peer (`deliver`, `peerEnds`, `takeReceived`) and the socket's
/// capacity (`accepting`: how many more bytes the "socket" takes before it pushes back).
/// Loop-thread only, like a real side; needs no loop.
public final class InMemoryTunnelEndpoint: TunnelEndpoint {
    /// Unowned: the tunnel clears it before it goes (`Tunnel.close`, `deinit`); no count per event.
    public unowned(unsafe) var events: TunnelEndpointEvents?
    public let input: OpaquePointer
    private let output: OpaquePointer
    /// What the "socket" took, in order.
    public private(set) var received: [UInt8] = []
    /// Bytes the "socket" still takes; nil: no limit.
    public var accepting: Int?
    public private(set) var reading = false
    public private(set) var isClosed = false
    public var failure: String? { nil }

    public init() {
        input = evbuffer_new()
        output = evbuffer_new()
    }

    deinit {
        evbuffer_free(input)
        evbuffer_free(output)
    }

    public var pendingOutput: Int { evbuffer_get_length(output) }

    /// The peer sends `bytes`: they are appended to the input and, if reading, announced.
    /// Bytes given before the tunnel starts are the ones read ahead of it.
    public func deliver(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = evbuffer_add(input, $0.baseAddress, $0.count) }
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

    public func send(from source: OpaquePointer, count: Int) {
        evbuffer_remove_buffer(source, output, count)
        write()
    }

    public func send(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
        write()
    }

    /// Bytes come through `input` only (`deliver`).
    public func relayDirectly(_ on: Bool) -> Bool { false }
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelReceive { .wouldBlock }

    public func send(bytes: UnsafeRawBufferPointer) {
        _ = evbuffer_add(output, bytes.baseAddress, bytes.count)
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
        var bytes = [UInt8](repeating: 0, count: n)
        evbuffer_remove(output, &bytes, n)
        received += bytes
        if let a = accepting { accepting = a - n }
        events?.endpointWrote(self)
    }
}
