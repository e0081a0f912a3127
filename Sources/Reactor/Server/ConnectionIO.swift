import Glibc

/// How a server connection moves bytes between its socket and its byte queues: plain reads
/// and writevs, or TLS records (`TLSConnectionIO`). Chosen once per connection at accept,
/// so a plain connection pays one indirect call per read or write for the choice and
/// nothing else. Loop-thread only, like the connection that owns it.
protocol ConnectionIO: AnyObject {
    /// Appends at most `room` (> 0) bytes from the peer to `input`.
    func read(into input: ByteQueue, room: Int) -> ConnectionRead
    /// Writes from the front of `output` (draining what went out) until it is empty or the
    /// socket pushes back.
    func write(from output: ByteQueue) -> ConnectionWrite
    /// Says that no more output follows (TLS: a close_notify), before the write side of the
    /// socket is shut down or the socket closed. Best effort, never blocks; idempotent.
    func endOutput()
    /// Why the last read or write failed, for logs and tests (never for the wire).
    var failure: String? { get }
}

/// What one `ConnectionIO.read` did: `bytes` appended, then why it stopped.
struct ConnectionRead {
    enum Stop {
        /// Nothing more to say: the socket's readiness tells when to read again.
        case open
        /// The IO holds more input (decrypted TLS bytes) that no readiness event will
        /// announce: read again as soon as there is room.
        case buffered
        /// A TLS read needs the socket writable first (handshake or key update output).
        case needsWritable
        /// The peer ended its stream.
        case end
        /// The connection cannot go on (`failure` says why).
        case failed
    }
    var bytes: Int
    var stop: Stop
    /// The read took all the room it asked the socket for: more may be waiting there, which
    /// an edge-triggered watch does not report again (`EdgeTriggered`).
    var filled = false
}

/// What one `ConnectionIO.write` did: `bytes` of output written (and drained), then why
/// it stopped.
struct ConnectionWrite {
    enum Stop {
        /// The output is empty.
        case done
        /// The socket is full: wait for writable.
        case blocked
        /// A TLS write needs bytes from the peer first.
        case needsReadable
        case failed
    }
    var bytes: Int
    var stop: Stop
}

/// Plain TCP: one `recv` of at most `room` (`ByteQueue.receive`) and `sendmsg` of the
/// queued pieces (`ByteQueue.send`).
final class PlainConnectionIO: ConnectionIO {
    private let fd: Int32
    private(set) var failure: String?

    init(fd: Int32) { self.fd = fd }

    func read(into input: ByteQueue, room: Int) -> ConnectionRead {
        var filled = false
        let n = input.receive(from: fd, max: room, filled: &filled)
        if n > 0 { return ConnectionRead(bytes: Int(n), stop: .open, filled: filled) }
        if n == 0 { return ConnectionRead(bytes: 0, stop: .end) }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return ConnectionRead(bytes: 0, stop: .open) }
        failure = "read: \(String(cString: strerror(errno)))"
        return ConnectionRead(bytes: 0, stop: .failed)
    }

    func write(from output: ByteQueue) -> ConnectionWrite {
        var total = 0
        while output.count > 0 {
            let (n, full) = output.send(to: fd)
            if n > 0 {
                total += n
                if full { return ConnectionWrite(bytes: total, stop: .blocked) }
                continue
            }
            if n == -Int(EINTR) { continue }
            if n == -Int(EAGAIN) || n == -Int(EWOULDBLOCK) {
                return ConnectionWrite(bytes: total, stop: .blocked)
            }
            failure = "write: \(n == 0 ? "no progress" : String(cString: strerror(Int32(-n))))"
            return ConnectionWrite(bytes: total, stop: .failed)
        }
        return ConnectionWrite(bytes: total, stop: .done)
    }

    func endOutput() {}
}
