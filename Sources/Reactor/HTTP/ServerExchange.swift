/// What the gateway knows of the client connection a request came on. One per connection,
/// shared by its exchanges (pipelined or sequential, or an HTTP/2 connection's streams).
public final class ClientConnection {
    /// The TCP peer's address (numeric): what X-Forwarded-For trust is decided on.
    public let peer: String
    public let isTLS: Bool
    /// Whatever the layer above keeps per connection (the gateway: the peer's trust,
    /// computed once per config generation). Reactor never looks at it.
    public var context: AnyObject?
    /// The TLS session the certificate is read from, once, when first asked.
    weak var tls: TLSConnectionIO?
    private var certificate: ClientCertificate??

    public init(peer: String, isTLS: Bool) {
        self.peer = peer
        self.isTLS = isTLS
    }

    /// A test's connection that presented `certificate`.
    public init(peer: String, certificate: ClientCertificate) {
        self.peer = peer
        isTLS = true
        self.certificate = .some(certificate)
    }

    /// The certificate the client presented and the listener verified (mutual TLS, RFC 8705
    /// §3), or nil: a plain connection, a listener that asks for none, a client that sent none.
    /// Known once a request has arrived (the handshake is over by then).
    public var clientCertificate: ClientCertificate? {
        if let certificate { return certificate }
        let read = tls?.clientCertificate
        certificate = .some(read)
        return read
    }
}

/// One request as the gateway handles it, whatever engine received it: the head (decided
/// on before any body byte is read), the body (read only if and as the gateway asks), and
/// the responder that answers it exactly once — the exchange itself, so that a request is
/// one object, not two. Loop-thread only.
public final class ServerExchange: Responder {
    public let head: HTTPRequestHead
    public let connection: ClientConnection
    public let body: RequestBody
    /// The one way to answer this request (see `Responder`). Inlinable: called from the
    /// gateway's module, a getter returned its result retained, an atomic retain and release
    /// around every use on the request path.
    @inlinable public var responder: Responder { self }

    public init(head: HTTPRequestHead, connection: ClientConnection, body: RequestBody, transport: ResponseTransport) {
        self.head = head
        self.connection = connection
        self.body = body
        super.init(transport: transport)
    }
}

/// An engine serving exchanges on listening sockets (`HTTPServer`, plain or TLS; an
/// HTTP/2 server later).
public protocol ExchangeServer: AnyObject {
    /// Serves on an already listening socket (see `Listener`); the server closes it.
    func serve(listeningSocket fd: Int32) throws
    /// Stops accepting new connections; those open keep being served.
    func stopAccepting()
    /// New limits for connections and requests from now on (reload).
    func apply(_ options: HTTPServerOptions)
    /// Client connections open now.
    var openConnections: Int { get }
    /// Times accepting paused because `maxConnections` were open.
    var acceptPauses: Int { get }
    /// Idle connections closed to make room for new ones at `maxConnections`.
    var reclaimedConnections: Int { get }
}
