import Glibc

/// One accepted client socket on one loop: the transport under a protocol handler, a
/// policy over its `SocketChannel` (the fd, its events and deadline, its close). It owns
/// the channel, its input and output byte queues and its `ConnectionIO` (plain, or TLS
/// with the SSL object), and closes them in one place (`close`). It holds itself while
/// open (`keptOpen`): nothing else need keep an open connection. Read interest is armed only while the
/// handler wants bytes and the input is under its bound; write interest only while a write
/// came back short (EAGAIN). On plain connections output goes out with one `sendmsg` of
/// every queued piece (`ByteQueue.send`: head and body of a response together).
///
/// TLS adds three cases that plain connections never see: a TLS read that needs the socket
/// writable (handshake, key update) arms write interest and is retried on writable; a TLS
/// write that needs the peer's bytes arms read interest and is retried on readable (both
/// kept as the machine's `TLSWait`); decrypted bytes left inside OpenSSL (the input was
/// full) are read by activating the read event by hand, since the socket will not announce
/// them.
///
/// Closing after a response is graceful (flush, TLS close_notify, FIN, then a short
/// lingering read so that unread request bytes do not turn into an RST that destroys the
/// response); `close()` is immediate (with a close_notify when the session allows). Which
/// of those stages the connection is in, and what the peer and TLS wait for, is
/// `ServerConnectionStateMachine`'s. Loop-thread only.
final class ServerConnection: IdleListNode {
    /// Bytes read from the socket and not yet consumed by the handler.
    let input = ByteQueue()
    /// Bytes queued for the socket.
    let output = ByteQueue()
    let info: ClientConnection
    /// The protocol on this connection; detached (nil) once closed or lingering.
    var handler: ServerConnectionHandler?
    /// Called once when the fd is closed (the server's bookkeeping).
    var onClose: ((ServerConnection) -> Void)?
    /// Bytes written to the socket since accept.
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) private(set) var bytesWritten: UInt64 = 0
    /// Open, finishing, lingering or closed; the peer's end; TLS's wait.
    @exclusivity(unchecked) private var machine = ServerConnectionStateMachine()
    var isClosed: Bool { machine.isClosed }
    var peerClosed: Bool { machine.peerClosed }
    /// Its place among the server's idle connections (`ServerContext.idle`).
    var idleLinks = IdleLinks<ServerConnection>()

    private let channel: SocketChannel
    private var fd: Int32 { channel.fd }
    private let io: ConnectionIO
    /// Plain TCP (no TLS): the socket may be read and written directly (`receive`, `send`).
    private let isPlain: Bool
    /// How readiness is watched, and who reads. Unchecked exclusivity, as `machine`.
    @exclusivity(unchecked) private var watch: Watch

    private enum Watch {
        /// Plain sockets, by edge (`EdgeTriggered`): a read that may have left bytes (or seen
        /// the peer's FIN with them) is followed by another.
        case edge
        /// By level: TLS sockets, and tunnels (`watchByLevel`).
        case level
        /// By level, with readiness handed to a tunnel's direct relay unread
        /// (`receive(into:)`): plain tunnels only.
        case direct
    }

    private var edgeTriggered: Bool { watch == .edge }

    /// Why a direct read or write failed.
    private var directFailure: String?
    /// The handler wants bytes (and the input has room).
    private var reading = false
    /// Output is waiting for the socket to take it.
    private var outputBlocked = false
    /// Input may be waiting that no readiness event will announce: decrypted TLS bytes
    /// inside OpenSSL, or bytes left in an edge-triggered socket.
    private var inputBuffered = false
    private var flushing = false
    private var thread = LoopThread()
    /// The connection's reference to itself while open, released at the end of `close()`.
    private var keptOpen: Unmanaged<ServerConnection>?

    /// Most bytes held in `input` (one read never takes more than the room left).
    static let inputLimit = 64 << 10
    /// How long a closing connection keeps reading (and dropping) what the client still sends.
    static let lingerSeconds = 2.0

    /// Takes ownership of `fd` (non-blocking, connected) and of `io` (which works on that
    /// fd). Runs on the loop thread.
    init(base: OpaquePointer, fd: Int32, io: ConnectionIO, info: ClientConnection) {
        channel = SocketChannel(base: base)
        self.io = io
        self.info = info
        isPlain = io is PlainConnectionIO
        watch = isPlain && SocketChannel.edgeSupported(base: base) ? .edge : .level
        thread.bind()
        keptOpen = Unmanaged.passRetained(self)
        channel.handler = self
        if !channel.attach(fd, watch: edgeTriggered ? .edge : .level, writePersists: true) { close() }
    }

    deinit {
        assert(isClosed, "a connection was dropped open")
    }

    // MARK: reading

    /// TLS chose `h2` in ALPN (false on plain connections).
    var negotiatedH2: Bool { (io as? TLSConnectionIO)?.negotiatedH2 ?? false }

    /// Why the connection failed, if its IO did (for logs and tests, never the wire).
    var failure: String? { directFailure ?? io.failure }

    /// Arms or disarms read interest (no system call when unchanged).
    func setReading(_ want: Bool) {
        let want = want && !isClosed && !peerClosed && input.count < Self.inputLimit
        if want != reading {
            reading = want
            updateReadInterest()
        }
        // Armed first, activated second: libevent's event_add does not register the fd of an
        // event that is already active, so the other order left a TLS connection whose input
        // had filled (and whose records waited inside OpenSSL) never read from again.
        if want && inputBuffered { channel.activateRead() }
    }

    private func updateReadInterest() {
        channel.setReadInterest((reading || machine.tls.writeNeedsRead) && !isClosed)
    }

    func channelReadable(_ events: SocketEvents) {
        thread.check()
        guard !isClosed else { return }
        if edgeTriggered && events.contains(.peerEnded) { machine.peerFINReported() }
        if machine.tls.readableRetriesWrite() {
            updateReadInterest()
            flush()
            guard !isClosed, reading else { return }
        }
        if watch == .direct {
            handler?.connectionReadable(self)
            return
        }
        let room = Self.inputLimit - input.count
        guard room > 0 else {
            setReading(false)
            return
        }
        let result = io.read(into: input, room: room)
        inputBuffered =
            result.stop == .buffered || (edgeTriggered && result.bytes > 0 && (result.filled || machine.peerEnding))
        if result.bytes > 0 {
            if machine.isLingering {
                input.drain(input.count)
            } else {
                handler?.connectionReadable(self)
            }
            guard !isClosed else { return }
        }
        switch result.stop {
        case .open, .buffered:
            // The handler's setReading(true) usually did this already; it may have left
            // `reading` unchanged without calling.
            if inputBuffered, reading { channel.activateRead() }
        case .needsWritable:
            machine.tls.readWantsWrite()
            updateWriteInterest()
        case .end:
            let action = machine.peerEnded()
            setReading(false)
            switch action {
            case .close: close()
            case .tellHandler: handler?.connectionPeerClosed(self)
            case .none: break
            }
        case .failed:
            close()
        }
    }

    /// Watches the socket by level from now on. A tunnel has no deadline, so a reset that
    /// came in one edge with the client's last bytes, which libevent reports without
    /// `EV_CLOSED` (`EdgeTriggered`), would hold it open until its idle timeout. libevent
    /// takes no mix of both kinds on one fd (`SocketChannel.watchByLevel`).
    func watchByLevel() {
        thread.check()
        guard edgeTriggered, !isClosed else { return }
        watch = .level
        guard channel.watchByLevel() else {
            close()
            return
        }
        if reading && inputBuffered { channel.activateRead() }
    }

    // MARK: direct relay (tunnels over plain TCP)

    /// Turns the direct relay on or off; false if this connection cannot (TLS, closing, or
    /// still watched by edge: a tunnel is watched by level first, `watchByLevel`).
    func relayDirectly(_ on: Bool) -> Bool {
        guard on else {
            if watch == .direct { watch = .level }
            return true
        }
        guard isPlain, machine.isOpen, watch != .edge else { return false }
        watch = .direct
        return true
    }

    /// One read from the socket straight into `buffer`, past `input`.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> ConnectionRead {
        thread.check()
        guard !isClosed, watch == .direct else { return ConnectionRead(bytes: 0, stop: .open) }
        // By level: what one read leaves is announced again.
        let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
        if n > 0 { return ConnectionRead(bytes: n, stop: .open) }
        if n == 0 {
            // The relay's handler hears the end from the returned stop, not from the machine.
            _ = machine.peerEnded()
            setReading(false)
            return ConnectionRead(bytes: 0, stop: .end)
        }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return ConnectionRead(bytes: 0, stop: .open) }
        directFailure = "read: \(String(cString: strerror(errno)))"
        return ConnectionRead(bytes: 0, stop: .failed)
    }

    /// Writes `bytes` now when nothing is queued before them (one send, not through the queue); what
    /// the socket does not take, or everything when output waits, is queued and goes out
    /// with the output.
    func send(_ bytes: UnsafeRawBufferPointer) {
        thread.check()
        guard !isClosed else { return }
        guard isPlain, !flushing, output.count == 0 else {
            output.append(bytes)
            flush()
            return
        }
        let n = channel.send(bytes)
        if n > 0 { bytesWritten += UInt64(n) }
        if n == bytes.count { return }
        if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            directFailure = "write: \(String(cString: strerror(errno)))"
            close()
            return
        }
        // The socket is full: queue the rest and wait for writable.
        let sent = max(n, 0)
        output.append(UnsafeRawBufferPointer(rebasing: bytes[sent...]))
        outputBlocked = true
        updateWriteInterest()
    }

    // MARK: writing

    /// Writes the output now, as far as the socket takes it.
    func flush() {
        thread.check()
        guard !isClosed, !flushing else { return }
        // Written now, so the turn's scheduled write has nothing left to do: taking it off
        // the active queue costs less than running it.
        if channel.writeScheduled { channel.disarmWrite() }
        flushing = true
        let result = io.write(from: output)
        flushing = false
        bytesWritten += UInt64(result.bytes)
        switch result.stop {
        case .done, .blocked:
            break
        case .needsReadable:
            machine.tls.writeWantsRead()
            updateReadInterest()
        case .failed:
            close()
            return
        }
        let pending = output.count > 0
        outputBlocked = pending && result.stop == .blocked
        updateWriteInterest()
        if result.bytes > 0 { handler?.connectionWrote(self) }
        if !isClosed && machine.outputWritten(outputPending: pending) { stopWriting() }
    }

    private func updateWriteInterest() {
        let armed = (outputBlocked || machine.tls.readNeedsWrite) && !isClosed
        guard armed != channel.writeArmed else { return }
        if armed { _ = channel.armWrite() } else { channel.disarmWrite() }
    }

    /// Writes the output later in this loop turn, so that pieces queued by one callback (a
    /// streamed head and its first chunk) go out in one writev.
    func scheduleFlush() {
        guard !isClosed else { return }
        channel.scheduleWrite()
    }

    func channelWritable(_ events: SocketEvents) {
        thread.check()
        if machine.tls.writableRetriesRead() {
            updateWriteInterest()
            channelReadable(.readable)
            guard !isClosed else { return }
        }
        flush()
    }

    // MARK: deadlines

    /// Sets the one deadline (replacing any), or clears it with nil.
    func setDeadline(_ seconds: Double?) {
        guard !machine.isLingering else { return }
        channel.setDeadline(seconds)
    }

    func channelDeadlinePassed() {
        thread.check()
        switch machine.deadlinePassed() {
        case .close: close()
        case .tellHandler: handler?.connectionDeadline(self)
        case .none: break
        }
    }

    // MARK: closing

    /// Closes once the output is written: the handler is done with the connection.
    /// `linger`: the client may still be sending (an unread body, pipelined bytes), so
    /// close in stages; otherwise close as soon as the output is out.
    func finish(linger: Bool) {
        let action = machine.finish(linger: linger, outputPending: output.count > 0)
        guard action != .none else { return }
        setReading(false)
        if action == .stopWriting { stopWriting() } else { flush() }
    }

    /// The output is out: the handler is detached; then the connection closes, or (lingering)
    /// sends its FIN and reads and drops what the client still sends until it closes or the
    /// linger time passes (RFC 9112 §9.6: close in stages, so that the response is not lost
    /// to the reset a close with unread input causes).
    private func stopWriting() {
        let action = machine.stopWriting()
        let h = handler
        handler = nil
        h?.connectionClosed(self)
        guard !isClosed else { return }
        guard action == .linger else {
            close()
            return
        }
        io.endOutput()
        if shutdown(fd, Int32(SHUT_WR)) != 0 {
            close()
            return
        }
        input.drain(input.count)
        channel.setDeadline(Self.lingerSeconds)
        reading = false
        setReading(true)
    }

    /// Closes now: the close_notify if TLS allows, then the channel (its events, the fd,
    /// once); tells the handler. Idempotent.
    func close() {
        guard machine.close() else { return }
        io.endOutput()
        channel.close()
        let h = handler
        handler = nil
        h?.connectionClosed(self)
        let done = onClose
        onClose = nil
        done?(self)
        if let kept = keptOpen {
            keptOpen = nil
            kept.release()
        }
    }
}

extension ServerConnection: SocketChannelHandler {}
