/// What runs the protocol on a client connection: the HTTP/1.1 handler today; later a
/// tunnel after a 101, or an HTTP/2 session, can take the connection over without the
/// transport changing (docs/architecture.md: connection → protocol handler → exchange).
/// The connection calls these on the loop thread.
protocol ServerConnectionHandler: AnyObject {
    /// New bytes were appended to `connection.input`.
    func connectionReadable(_ connection: ServerConnection)
    /// The peer closed its side (end of stream); `connection.input` may still hold bytes.
    func connectionPeerClosed(_ connection: ServerConnection)
    /// Some output was written to the socket (`bytesWritten` grew); `output` may be empty.
    func connectionWrote(_ connection: ServerConnection)
    /// The deadline set with `setDeadline` passed.
    func connectionDeadline(_ connection: ServerConnection)
    /// The connection is closed, or past the handler (lingering before close): the handler
    /// is detached and must release what it holds. Called once.
    func connectionClosed(_ connection: ServerConnection)
}
