/// Limits and timeouts of one HTTP server.
public struct HTTPServerOptions: Sendable {
    public var maxBodySize: Int = 4 << 20
    public var maxHeaderSize: Int = 32 << 10
    /// Idle keep-alive and read/write timeout on client connections, seconds.
    public var idleTimeout: Double = 60
    /// Client connections open at once, across every server sharing a `ConnectionBudget`
    /// (the gateway: the whole process). At the cap the oldest idle connection is closed
    /// for a new one; with none idle, accepting stops until one closes.
    public var maxConnections: Int = 10_000
    /// Seconds a client has to send a whole request head (408 and close after that).
    public var headerTimeout: Double = 10
    /// Seconds of silence allowed inside a request body.
    public var bodyTimeout: Double = 30
    /// The total deadline and minimum rate of a request body (off unless set).
    public var bodyPace = BodyPace()
    public init() {}
}
