internal import CEvent
import Glibc

/// One accepted client socket on one loop: the transport under a protocol handler. It owns
/// the fd, its three libevent events (read, write, deadline), its input and output
/// evbuffers and its `ConnectionIO` (plain, or TLS with the SSL object), and frees them in
/// one place (`close`; the IO with the connection). Read interest is armed only while the
/// handler wants bytes and the input is under its bound; write interest only while a write
/// came back short (EAGAIN). On plain connections output goes out with one `sendmsg` of
/// every queued piece (`SocketWrite`: head and body of a response together).
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
    let input: OpaquePointer
    /// Bytes queued for the socket.
    let output: OpaquePointer
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

    private let fd: Int32
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

    /// The write event's two uses, which libevent keeps apart too: added (pending) it waits
    /// for the socket; activated by hand it runs once this turn. Deleting it ends both.
    private enum WriteEventUse {
        case idle
        /// Activated by hand: the queued output goes out later this turn, in one write.
        case scheduled
        /// Added: waits for the socket to take output (or for a TLS read's writable).
        case armed
    }
    /// Why a direct read or write failed.
    private var directFailure: String?
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    private var timerEvent: OpaquePointer?
    /// The one deadline, over `timerEvent` (moving it per request costs no timer update).
    @exclusivity(unchecked) private var deadline = LazyDeadline()
    /// The handler wants bytes (and the input has room).
    private var reading = false
    private var readArmed = false
    /// Output is waiting for the socket to take it.
    private var outputBlocked = false
    /// What the write event is doing. Unchecked exclusivity, as `machine`.
    @exclusivity(unchecked) private var writing = WriteEventUse.idle
    /// Input may be waiting that no readiness event will announce: decrypted TLS bytes
    /// inside OpenSSL, or bytes left in an edge-triggered socket.
    private var inputBuffered = false
    private var flushing = false
    private var thread = LoopThread()
    /// libevent's reference to this connection while its events exist; released by `close()`
    /// right after the events are freed, so no callback can reach a freed connection.
    private var callbackContext: Unmanaged<ServerConnection>?

    /// Most bytes held in `input` (one read never takes more than the room left).
    static let inputLimit = 64 << 10
    /// How long a closing connection keeps reading (and dropping) what the client still sends.
    static let lingerSeconds = 2.0

    /// Takes ownership of `fd` (non-blocking, connected) and of `io` (which works on that
    /// fd). Runs on the loop thread.
    init(base: OpaquePointer, fd: Int32, io: ConnectionIO, info: ClientConnection) {
        self.fd = fd
        self.io = io
        self.info = info
        isPlain = io is PlainConnectionIO
        watch = isPlain && EdgeTriggered.supported(base) ? .edge : .level
        input = evbuffer_new()
        output = evbuffer_new()
        thread.bind()
        let context = Unmanaged.passRetained(self)
        callbackContext = context
        let arg = context.toOpaque()
        let readFlags = Int16(EV_READ | EV_PERSIST) | (edgeTriggered ? EdgeTriggered.readFlags : 0)
        let writeFlags = Int16(EV_WRITE | EV_PERSIST) | (edgeTriggered ? EdgeTriggered.writeFlags : 0)
        readEvent = event_new(base, fd, readFlags, readThunk, arg)
        writeEvent = event_new(base, fd, writeFlags, writeThunk, arg)
        timerEvent = event_new(base, -1, 0, timerThunk, arg)
        if readEvent == nil || writeEvent == nil || timerEvent == nil { close() }
    }

    deinit {
        assert(isClosed, "a connection was dropped open")
        evbuffer_free(input)
        evbuffer_free(output)
    }

    // MARK: reading

    /// TLS chose `h2` in ALPN (false on plain connections).
    var negotiatedH2: Bool { (io as? TLSConnectionIO)?.negotiatedH2 ?? false }

    /// Why the connection failed, if its IO did (for logs and tests, never the wire).
    var failure: String? { directFailure ?? io.failure }

    /// Arms or disarms read interest (no system call when unchanged).
    func setReading(_ want: Bool) {
        let want = want && !isClosed && !peerClosed && evbuffer_get_length(input) < Self.inputLimit
        if want != reading {
            reading = want
            updateReadInterest()
        }
        // Armed first, activated second: libevent's event_add does not register the fd of an
        // event that is already active, so the other order left a TLS connection whose input
        // had filled (and whose records waited inside OpenSSL) never read from again.
        if want && inputBuffered, let readEvent { event_active(readEvent, Int32(EV_READ), 0) }
    }

    private func updateReadInterest() {
        let armed = (reading || machine.tls.writeNeedsRead) && !isClosed
        guard armed != readArmed, let readEvent else { return }
        readArmed = armed
        if armed { event_add(readEvent, nil) } else { event_del(readEvent) }
    }

    fileprivate func readable(_ what: Int16) {
        thread.check()
        guard !isClosed else { return }
        if edgeTriggered && EdgeTriggered.peerEnded(what) { machine.peerFINReported() }
        if machine.tls.readableRetriesWrite() {
            updateReadInterest()
            flush()
            guard !isClosed, reading else { return }
        }
        if watch == .direct {
            handler?.connectionReadable(self)
            return
        }
        let room = Self.inputLimit - evbuffer_get_length(input)
        guard room > 0 else {
            setReading(false)
            return
        }
        let result = io.read(into: input, room: room)
        inputBuffered =
            result.stop == .buffered || (edgeTriggered && result.bytes > 0 && (result.filled || machine.peerEnding))
        if result.bytes > 0 {
            if machine.isLingering {
                evbuffer_drain(input, evbuffer_get_length(input))
            } else {
                handler?.connectionReadable(self)
            }
            guard !isClosed else { return }
        }
        switch result.stop {
        case .open, .buffered:
            // The handler's setReading(true) usually did this already; it may have left
            // `reading` unchanged without calling.
            if inputBuffered, reading, let readEvent { event_active(readEvent, Int32(EV_READ), 0) }
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
    /// takes no mix of both kinds on one fd: both events are made again.
    func watchByLevel() {
        thread.check()
        guard edgeTriggered, !isClosed, let context = callbackContext, let old = readEvent,
            let base = event_get_base(old)
        else { return }
        for event in [readEvent, writeEvent] { if let event { event_free(event) } }
        watch = .level
        let arg = context.toOpaque()
        readEvent = event_new(base, fd, Int16(EV_READ | EV_PERSIST | EV_CLOSED), readThunk, arg)
        writeEvent = event_new(base, fd, Int16(EV_WRITE | EV_PERSIST), writeThunk, arg)
        guard let readEvent, let writeEvent else {
            close()
            return
        }
        // The loop's changelist makes one epoll_ctl of a turn's changes on an fd, edge-
        // triggered if any change came from an edge event (the deletes above). Each kind is
        // changed once more by a level event, an add then a delete when not wanted, so that
        // none of those is left.
        event_add(readEvent, nil)
        if !readArmed { event_del(readEvent) }
        event_add(writeEvent, nil)
        if writing != .armed {
            event_del(writeEvent)
            if writing == .scheduled { event_active(writeEvent, Int32(EV_WRITE), 0) }
        }
        if reading && inputBuffered { event_active(readEvent, Int32(EV_READ), 0) }
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

    /// Writes `bytes` now when nothing is queued before them (one send, no evbuffer); what
    /// the socket does not take, or everything when output waits, is queued and goes out
    /// with the output.
    func send(_ bytes: UnsafeRawBufferPointer) {
        thread.check()
        guard !isClosed else { return }
        guard isPlain, !flushing, evbuffer_get_length(output) == 0 else {
            _ = evbuffer_add(output, bytes.baseAddress, bytes.count)
            flush()
            return
        }
        let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        if n > 0 { bytesWritten += UInt64(n) }
        if n == bytes.count { return }
        if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            directFailure = "write: \(String(cString: strerror(errno)))"
            close()
            return
        }
        // The socket is full: queue the rest and wait for writable.
        let sent = max(n, 0)
        _ = evbuffer_add(output, bytes.baseAddress! + sent, bytes.count - sent)
        outputBlocked = true
        updateWriteInterest()
    }

    // MARK: writing

    /// Writes the output now, as far as the socket takes it.
    func flush() {
        thread.check()
        guard !isClosed, !flushing else { return }
        if writing == .scheduled, let writeEvent {
            // Written now, so the turn's scheduled write has nothing left to do: taking it
            // off the active queue costs less than running it.
            writing = .idle
            event_del(writeEvent)
        }
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
        let pending = evbuffer_get_length(output) > 0
        outputBlocked = pending && result.stop == .blocked
        updateWriteInterest()
        if result.bytes > 0 { handler?.connectionWrote(self) }
        if !isClosed && machine.outputWritten(outputPending: pending) { stopWriting() }
    }

    private func updateWriteInterest() {
        let armed = (outputBlocked || machine.tls.readNeedsWrite) && !isClosed
        guard armed != (writing == .armed), let writeEvent else { return }
        // Disarming also drops a scheduled run (libevent's delete ends both).
        writing = armed ? .armed : .idle
        if armed { event_add(writeEvent, nil) } else { event_del(writeEvent) }
    }

    /// Writes the output later in this loop turn, so that pieces queued by one callback (a
    /// streamed head and its first chunk) go out in one writev.
    func scheduleFlush() {
        guard !isClosed, writing == .idle, let writeEvent else { return }
        writing = .scheduled
        event_active(writeEvent, Int32(EV_WRITE), 0)
    }

    fileprivate func writable() {
        thread.check()
        if writing == .scheduled { writing = .idle }
        if machine.tls.writableRetriesRead() {
            updateWriteInterest()
            readable(Int16(EV_READ))
            guard !isClosed else { return }
        }
        flush()
    }

    // MARK: deadlines

    /// Sets the one deadline (replacing any), or clears it with nil.
    func setDeadline(_ seconds: Double?) {
        guard let timerEvent, !machine.isLingering else { return }
        deadline.set(seconds, event: timerEvent)
    }

    fileprivate func deadlinePassed() {
        thread.check()
        guard let timerEvent, deadline.fired(event: timerEvent) else { return }
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
        let action = machine.finish(linger: linger, outputPending: evbuffer_get_length(output) > 0)
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
        evbuffer_drain(input, evbuffer_get_length(input))
        if let timerEvent { deadline.set(Self.lingerSeconds, event: timerEvent) }
        reading = false
        setReading(true)
    }

    /// Closes now: frees the events, closes the fd (once), tells the handler. Idempotent.
    func close() {
        guard machine.close() else { return }
        for event in [readEvent, writeEvent, timerEvent] { if let event { event_free(event) } }
        readEvent = nil
        writeEvent = nil
        timerEvent = nil
        io.endOutput()
        Glibc.close(fd)
        let h = handler
        handler = nil
        h?.connectionClosed(self)
        let done = onClose
        onClose = nil
        done?(self)
        if let context = callbackContext {
            callbackContext = nil
            context.release()
        }
    }
}

private func connection(_ arg: UnsafeMutableRawPointer?) -> ServerConnection {
    Unmanaged<ServerConnection>.fromOpaque(arg!).takeUnretainedValue()
}

private func readThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) { connection(arg).readable(what) }
private func writeThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) { connection(arg).writable() }
private func timerThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    connection(arg).deadlinePassed()
}
