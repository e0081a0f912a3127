/// One side of a tunnel: a connection whose bytes are now opaque, after a `101` (the
/// client's HTTP/1.1 connection, plain or TLS; the upstream's; later an HTTP/2 extended
/// CONNECT stream, RFC 8441). The tunnel moves bytes between two of them and needs only
/// this: the bytes that came in, a way to send, read interest, and the four events.
/// Loop-thread only.
public protocol TunnelEndpoint: AnyObject {
    /// Receives the events; not retained (the tunnel owns its sides and clears this first).
    var events: TunnelEndpointEvents? { get set }
    /// Bytes from the peer not yet taken: may hold bytes from before the
    /// tunnel began (what the client pipelined after its upgrade request, what the upstream
    /// sent after its 101 head).
    var input: ByteQueue { get }
    /// Bytes queued for the peer and not yet written.
    var pendingOutput: Int { get }
    /// Read interest (backpressure: off while the other side's output is full).
    func setReading(_ want: Bool)
    /// Moves `count` bytes from the front of `source` to this side's output,
    /// and writes.
    func send(from source: ByteQueue, count: Int)
    /// Queues bytes of the tunnel's own (a Close frame), and writes.
    func send(_ bytes: [UInt8])
    /// Direct relay, the tunnel's fast path: while on, readiness is reported
    /// (`endpointReadable`) before anything is read, and the tunnel reads with
    /// `receive(into:)` into its own scratch memory and passes the bytes on with
    /// `send(bytes:)` — no evbuffer chain allocated, moved and freed per message. Returns
    /// whether this side does it (plain sockets do; TLS and in-memory sides do not).
    func relayDirectly(_ on: Bool) -> Bool
    /// Direct relay: one read of at most `buffer.count` bytes into `buffer`.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelReceive
    /// Direct relay: writes `bytes` now if nothing is queued (what the socket does not take
    /// is queued, as is everything when output is already waiting).
    func send(bytes: UnsafeRawBufferPointer)
    /// Closes now (what is still queued is dropped). Idempotent; no event follows.
    func close()
    /// Why the connection failed, if it did (for logs).
    var failure: String? { get }
}

/// What one `TunnelEndpoint.receive(into:)` got.
public enum TunnelReceive {
    case bytes(Int)
    /// Nothing now: the next readiness says when.
    case wouldBlock
    /// The peer ended its stream (read interest is off).
    case ended
    /// The connection failed (`failure` says why).
    case failed
}

/// What a `TunnelEndpoint` tells its tunnel, on the loop thread.
public protocol TunnelEndpointEvents: AnyObject {
    /// New bytes are in `input`.
    func endpointReadable(_ endpoint: TunnelEndpoint)
    /// Some output was written (`pendingOutput` went down).
    func endpointWrote(_ endpoint: TunnelEndpoint)
    /// The peer ended its stream; `input` may still hold bytes.
    func endpointEnded(_ endpoint: TunnelEndpoint)
    /// The connection failed or was closed from below.
    func endpointFailed(_ endpoint: TunnelEndpoint)
}
