/// What a `Responder` needs from the connection its exchange arrived on. Each engine
/// implements it per exchange (the HTTP/1.1 connection, the in-memory transport of the
/// tests; an HTTP/2 stream later). Loop-thread only. The transport tells its responder
/// two things back: the whole response was written (`Responder.transportFlushed`), or the
/// connection went away first (`Responder.transportClosed`).
public protocol ResponseTransport: AnyObject {
    /// The client connection is still open.
    var isConnected: Bool { get }
    /// How much of a streamed answer may wait in `pendingOutput` before its producer (a
    /// proxied upstream) should pause.
    var highWater: Int { get }
    /// Bytes of this connection's output not yet written to the socket.
    var pendingOutput: Int { get }
    /// Attaches the responder the transport reports to (once, before anything is sent).
    func attach(_ responder: Responder)
    /// A whole response: head and body at once.
    func sendResponse(_ head: HTTPResponseHead, body: [UInt8], close: Bool)
    /// An interim (1xx) response ahead of the final one (RFC 9110 §15.2).
    func sendInterim(_ head: HTTPResponseHead)
    /// The head of a streamed response; its body follows in `sendBody` calls.
    func startResponse(_ head: HTTPResponseHead, close: Bool)
    /// Moves the chunk's bytes into the connection's output.
    func sendBody(_ chunk: BodyChunk)
    /// The streamed body is complete.
    func endResponse()
    /// A trailer section (RFC 9110 §6.5) sent with the end of a streamed body (the next
    /// `endResponse`). Only HTTP/2 carries one; HTTP/1.1 drops it, as nginx does.
    func sendTrailers(_ fields: HTTP1Fields)
    /// Cuts the connection: the client can tell the body is truncated.
    func abortResponse()
    /// The answer goes nowhere: the client is gone. The transport releases what it holds
    /// for the exchange and reports `transportClosed` if it has not already.
    func discardResponse()
    /// Calls `action` once the connection's output has been written out (flow control).
    func whenDrained(_ action: @escaping () -> Void)
    /// Answers `101 Switching Protocols` with `head` (its `Upgrade` field included) and
    /// gives up the connection: from now on it is the returned tunnel side (RFC 9110
    /// §15.2.2). nil when that cannot be (the client is gone, the request had a body or was
    /// not HTTP/1.1): the caller then answers otherwise or aborts.
    func switchProtocols(_ head: HTTPResponseHead) -> TunnelEndpoint?
}

extension ResponseTransport {
    public var highWater: Int { 256 << 10 }

    public func sendTrailers(_ fields: HTTP1Fields) {}
}
