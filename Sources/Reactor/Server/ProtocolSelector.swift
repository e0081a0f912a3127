/// The first handler of a connection on a server that speaks HTTP/2 as well as HTTP/1.1:
/// it decides which of the two the connection speaks, then hands the connection (and the
/// bytes read so far, left in its input) to that protocol's handler. Over TLS the decision
/// is ALPN's (RFC 9113 §3.2: `h2` chosen in the handshake); over plain TCP it is the
/// client's first bytes: the connection preface's first line, `PRI * HTTP/2.0` CRLF, means
/// HTTP/2 with prior knowledge (RFC 9113 §3.3), and nghttp2 checks the rest of the preface
/// (an invalid one is a connection error PROTOCOL_ERROR, §3.4: GOAWAY, then close); anything
/// else is HTTP/1.1, where that line is no request. `Upgrade: h2c` is never honoured (RFC 9113
/// §3.1 deprecates it): such a request is served as HTTP/1.1, and its Upgrade is not
/// forwarded. Until the choice, the connection is idle (reclaimable) and on the header
/// deadline, as an HTTP/1.1 connection is before its first byte. Loop-thread only.
final class ProtocolSelector: ServerConnectionHandler {
    private let context: ServerContext
    private var thread = LoopThread()

    /// The client connection preface (RFC 9113 §3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    /// Its first line: a client that sends it is speaking HTTP/2, whatever follows.
    static let prefaceLine = Array(preface.prefix(16))

    init(connection: ServerConnection, context: ServerContext) {
        self.context = context
        thread.bind()
        connection.setDeadline(context.options.headerTimeout)
        connection.setReading(true)
        context.idle.append(connection)
    }

    /// What the first bytes of a plain connection say.
    enum Choice: Equatable {
        case http1, http2
        /// A prefix of the preface: wait for more.
        case undecided
    }

    static func choose(_ bytes: UnsafeRawBufferPointer) -> Choice {
        let n = min(bytes.count, prefaceLine.count)
        for i in 0..<n where bytes[i] != prefaceLine[i] { return .http1 }
        return n == prefaceLine.count ? .http2 : .undecided
    }

    func connectionReadable(_ connection: ServerConnection) {
        thread.check()
        let input = connection.input
        let length = input.count
        guard length > 0 else { return }
        let choice: Choice
        if connection.info.isTLS {
            choice = connection.negotiatedH2 ? .http2 : .http1
        } else {
            let count = min(length, Self.prefaceLine.count)
            guard let front = input.pullUp(count) else { return }
            choice = Self.choose(front)
        }
        switch choice {
        case .undecided:
            return
        case .http1:
            context.idle.remove(connection)
            let handler = HTTP1ConnectionHandler(connection: connection, context: context)
            connection.handler = handler
            handler.connectionReadable(connection)
        case .http2:
            context.idle.remove(connection)
            let handler = HTTP2ConnectionHandler(connection: connection, context: context)
            connection.handler = handler
            handler.connectionReadable(connection)
        }
    }

    func connectionPeerClosed(_ connection: ServerConnection) {
        thread.check()
        connection.close()
    }

    func connectionWrote(_ connection: ServerConnection) {}

    /// No protocol chosen within the header timeout: nothing to answer in either.
    func connectionDeadline(_ connection: ServerConnection) {
        thread.check()
        connection.close()
    }

    func connectionClosed(_ connection: ServerConnection) {
        context.idle.remove(connection)
    }
}
