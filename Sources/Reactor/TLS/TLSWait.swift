/// What a TLS session waits for on its socket beyond the connection's own interest: a read
/// that needs the socket writable (handshake, key update) is retried on writable, a write
/// that needs the peer's bytes on readable. The one rule of both socket owners, the client
/// connection (`ServerConnectionStateMachine.tls`) and the upstream one
/// (`UpstreamTransport`). Plain connections stay `.none`. Both at once is rare (a read that
/// needs to write a key update while a write waits for the peer's record) but possible, and
/// dropping either wait would stall its side.
enum TLSWait: Equatable {
    case none
    /// The last read stopped for want of a writable socket.
    case readNeedsWrite
    /// The last write stopped for want of the peer's bytes.
    case writeNeedsRead
    case both

    var readNeedsWrite: Bool { self == .readNeedsWrite || self == .both }
    var writeNeedsRead: Bool { self == .writeNeedsRead || self == .both }

    /// A read stopped for want of a writable socket.
    mutating func readWantsWrite() { self = Self(read: true, write: writeNeedsRead) }

    /// A write stopped for want of the peer's bytes.
    mutating func writeWantsRead() { self = Self(read: readNeedsWrite, write: true) }

    /// The socket is writable: true if a read waited for that (it goes again now).
    mutating func writableRetriesRead() -> Bool {
        guard readNeedsWrite else { return false }
        self = Self(read: false, write: writeNeedsRead)
        return true
    }

    /// The socket is readable: true if a write waited for that (it goes again now).
    mutating func readableRetriesWrite() -> Bool {
        guard writeNeedsRead else { return false }
        self = Self(read: readNeedsWrite, write: false)
        return true
    }

    private init(read: Bool, write: Bool) {
        switch (read, write) {
        case (true, true): self = .both
        case (true, false): self = .readNeedsWrite
        case (false, true): self = .writeNeedsRead
        case (false, false): self = .none
        }
    }
}
