internal import CEvent

/// One HTTP/2 connection with no socket under it, for `HTTP2FuzzEntry`: the real
/// `ServerConnection` and `HTTP2ConnectionHandler`, with fd -1 (libevent adds no fd
/// below 0 to its backend, so the read and write events never fire) and an in-memory
/// `ConnectionIO` that takes every byte of output at once. Bytes are fed by appending to
/// the connection's input and telling the handler, as a socket read does.
final class HTTP2FuzzConnection {
    let connection: ServerConnection
    let handler: HTTP2ConnectionHandler
    private let io = MemoryConnectionIO()
    /// Owned here, freed last (after the connection's events, in `close`).
    private let base: OpaquePointer

    /// nil when libevent cannot make a base (out of memory).
    init?(context: ServerContext) {
        guard let base = event_base_new() else { return nil }
        self.base = base
        connection = ServerConnection(
            base: base, fd: -1, io: io, info: ClientConnection(peer: "192.0.2.1", isTLS: false))
        handler = HTTP2ConnectionHandler(connection: connection, context: context)
        connection.handler = handler
    }

    deinit { event_base_free(base) }

    /// What the handler wrote, in order.
    var written: [UInt8] { io.written }

    /// Bytes from the client, as one read.
    func feed(_ bytes: ArraySlice<UInt8>) {
        guard !connection.isClosed, !bytes.isEmpty else { return }
        connection.input.append(bytes)
        connection.handler?.connectionReadable(connection)
        runTurn()
    }

    /// Ends the loop turn: runs what was made active in it (the handler's flush, written at
    /// the end of a turn), as a socket's loop would before the next read.
    func runTurn() { _ = event_base_loop(base, EVLOOP_NONBLOCK) }

    /// The socket goes away: every stream still open ends (`connectionClosed`).
    func close() { connection.close() }
}

/// A `ConnectionIO` that writes into memory: the peer reads everything at once and never
/// sends (bytes come through `HTTP2FuzzConnection.feed`).
final class MemoryConnectionIO: ConnectionIO {
    private(set) var written: [UInt8] = []
    var failure: String? { nil }

    func read(into input: ByteQueue, room: Int) -> ConnectionRead { ConnectionRead(bytes: 0, stop: .open) }

    func write(from output: ByteQueue) -> ConnectionWrite {
        let n = output.count
        written += output.take(n)
        return ConnectionWrite(bytes: n, stop: .done)
    }

    func endOutput() {}
}
