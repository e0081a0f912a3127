import Glibc

/// What an `UpstreamTransport` reports, on the loop thread.
protocol UpstreamTransportHandler: AnyObject {
    /// The non-blocking connect finished: 0, or the socket's error (ECONNREFUSED, …).
    func transportConnected(_ transport: UpstreamTransport, error: Int32)
    /// The socket may be read (or `activateRead()` asked for a turn); `timedOut`: the read
    /// timeout passed without a byte.
    func transportReadable(_ transport: UpstreamTransport, timedOut: Bool)
    /// The socket takes output again after a short write; `timedOut`: it did not in time.
    func transportWritable(_ transport: UpstreamTransport, timedOut: Bool)
}

/// The byte I/O of one upstream connection: a non-blocking TCP socket, its read and write
/// events and its input and output buffers. Nothing here knows HTTP. An HTTPS upstream is
/// the same few operations (`connect`, `fill`, `flush`, the two interests) over TLS
/// (`startTLS`, then `TLSConnectionIO`'s SSL_read/SSL_write); a plain connection pays one
/// nil check per fill and flush for it. Read interest is registered while someone waits
/// for bytes; write interest only while a connect or handshake is in progress or after a
/// short write.
///
/// A policy over its `SocketChannel`, which owns the socket, its events and the read
/// deadline; `close()` closes it, once (also from `deinit`). Loop-thread only.
final class UpstreamTransport {
    enum ConnectStart {
        case connected, inProgress
        case failed(Int32)
    }
    enum Fill {
        case bytes(Int)
        case wouldBlock, eof
        case failed(Int32)
    }
    enum Flush {
        case done, pending
        case failed(Int32)
    }

    /// Bytes asked of the kernel per read.
    static let readSize = 64 << 10

    /// The connection while opening or idle, the `UpstreamCall` using it in between. Not
    /// retained, and not weak (a weak reference gives its object a side table, and every
    /// count of it the runtime's slow path): each handler lets go of the transport, or hands
    /// it on, before it goes (a call ends through its connection's release to the pool; a
    /// connection closes its transport in `deinit`; `close()` clears it).
    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) unowned(unsafe) var handler: UpstreamTransportHandler?
    /// A handler that owns this transport and closes it before it goes (a tunnel's upstream
    /// side): it gets the events instead of `handler`, held without a weak reference, which
    /// would cost a weak load per event and move every count of the owner to the runtime's
    /// slow path. `close()` clears it.
    @exclusivity(unchecked) unowned(unsafe) var owner: UpstreamTransportHandler?
    /// Bytes read and not yet consumed.
    let input = ByteQueue()
    /// Bytes queued for the socket.
    let output = ByteQueue()
    /// The socket, its events, and the read timeout as the channel's deadline, pushed on by
    /// every read (a timeout on the read event itself would cost a timer-heap update per
    /// read, and per request when it changes).
    private let channel: SocketChannel
    var fd: Int32 { channel.fd }
    private var readArmed: Bool { channel.readArmed }
    @exclusivity(unchecked) private var readTimeout: Double?
    // Unchecked exclusivity, as `readTimeout`: loop-thread only, read on every event.
    @exclusivity(unchecked) private var socketState = SocketState.none
    /// HTTPS upstreams: the TLS session over the socket, once `startTLS` ran.
    private(set) var tls: TLSConnectionIO?
    /// A TLS read needs the socket writable (or a write needs it readable) first: the next
    /// such event is passed on as the other kind.
    @exclusivity(unchecked) private var tlsWait = TLSWait.none

    /// Where the socket is in its life.
    private enum SocketState {
        /// None yet, or dropped after a failed connect (another address may follow).
        case none
        /// The connect is in progress: the next writable says how it went.
        case connecting
        case connected
        /// For good: no socket, no event, no handler call.
        case closed
    }

    var isConnected: Bool { socketState == .connected }
    var isClosed: Bool { socketState == .closed }

    init(loop: EventLoop) {
        channel = SocketChannel(base: loop.base)
        channel.handler = self
    }

    deinit { close() }

    /// Opens a non-blocking socket to `address` and starts the connect. `.inProgress`: the
    /// outcome comes through `transportConnected`. After a failure the caller may
    /// `dropSocket()` and connect to another address; the buffers are kept.
    func connect(to address: UpstreamAddress) -> ConnectStart {
        precondition(fd < 0 && !isClosed, "connect on a transport with a socket, or closed")
        let error = channel.openStream(family: address.family)
        guard error == 0 else { return .failed(error) }
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 {
            socketState = .connected
            return .connected
        }
        guard errno == EINPROGRESS else { return .failed(errno) }
        socketState = .connecting
        guard channel.armWrite() else { return .failed(ENOMEM) }
        return .inProgress
    }

    /// Registers read interest; with a timeout, `transportReadable(timedOut: true)` follows
    /// that long after the last readable event. False if libevent refused (the caller
    /// fails the exchange: nothing would ever wake it).
    @discardableResult
    func armRead(timeout: Double?) -> Bool {
        guard channel.isOpen else { return false }
        if readArmed && readTimeout == timeout { return true }
        // A change of deadline alone (a request on an idle pooled connection, or the
        // connection going back idle) leaves the fd's epoll interest as it is: a del + add
        // pair would reach the kernel as an epoll_ctl MOD each time.
        guard channel.setReadInterest(true) else { return false }
        readTimeout = timeout
        channel.setDeadline(timeout)
        return true
    }

    func disarmRead() {
        guard readArmed else { return }
        channel.setReadInterest(false)
        readTimeout = nil
        channel.dropDeadline()
    }

    /// A read turn on the next loop iteration even with nothing new on the socket (to
    /// consume what is already in `input` after a pause), outside the caller's stack.
    func activateRead() { channel.activateRead() }

    /// Write interest, after a short write (or for a handshake); false if libevent refused.
    func armWrite(timeout: Double?) -> Bool { channel.armWrite(timeout: timeout) }

    func disarmWrite() { channel.disarmWrite() }

    /// One read from the socket into `input` (one readv into reserved buffer space; over
    /// TLS, records until OpenSSL wants the socket or `readSize` is decrypted).
    func fill() -> Fill {
        guard fd >= 0 else { return .failed(EBADF) }
        if let tls { return fillTLS(tls) }
        // Level-triggered (`EdgeTriggered` says why): the next wait reports what is left.
        var filled = false
        let got = input.receive(from: fd, max: Int(Self.readSize), filled: &filled)
        if got > 0 { return .bytes(got) }
        if got == 0 { return .eof }
        let error = errno
        return error == EAGAIN || error == EWOULDBLOCK || error == EINTR ? .wouldBlock : .failed(error)
    }

    /// Writes `output` to the socket: sendmsg of up to 32 of its segments at once (head and
    /// body bytes in one system call), MSG_NOSIGNAL so a peer that is gone is an error
    /// code, not SIGPIPE. A short write stops (the socket buffer is full) and registers
    /// write interest with `timeout`.
    func flush(timeout: Double?) -> Flush {
        guard fd >= 0, isConnected else { return .pending }
        if let tls { return flushTLS(tls, timeout: timeout) }
        while output.count > 0 {
            let (result, full) = output.send(to: fd)
            if result == -Int(EINTR) { continue }
            if result < 0 && result != -Int(EAGAIN) && result != -Int(EWOULDBLOCK) { return .failed(Int32(-result)) }
            if result <= 0 || full { return armWrite(timeout: timeout) ? .pending : .failed(ENOMEM) }
        }
        return .done
    }

    var pendingOutput: Int { output.count }

    /// One plain read straight into `buffer`, past `input` (a tunnel's direct relay; not
    /// for TLS).
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> Fill {
        guard fd >= 0, tls == nil else { return .failed(EBADF) }
        let got = Glibc.read(fd, buffer.baseAddress, buffer.count)
        if got > 0 { return .bytes(got) }
        if got == 0 { return .eof }
        let error = errno
        return error == EAGAIN || error == EWOULDBLOCK || error == EINTR ? .wouldBlock : .failed(error)
    }

    /// Writes `bytes` now when nothing is queued before them (one send, not through the queue); what
    /// the socket does not take, or everything when output waits, is queued and goes out
    /// as `flush` would send it.
    func send(_ bytes: UnsafeRawBufferPointer, timeout: Double?) -> Flush {
        var sent = 0
        if fd >= 0, isConnected, tls == nil, output.count == 0 {
            let n = channel.send(bytes)
            if n == bytes.count { return .done }
            if n > 0 {
                sent = n
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                return .failed(errno)
            }
            // The socket is full: queue the rest and wait for writable.
            output.append(UnsafeRawBufferPointer(rebasing: bytes[sent...]))
            return armWrite(timeout: timeout) ? .pending : .failed(ENOMEM)
        }
        output.append(bytes)
        return flush(timeout: timeout)
    }

    /// Frees both events and closes the socket; idempotent, no handler call follows.
    func close() {
        guard socketState != .closed else { return }
        socketState = .closed
        handler = nil
        owner = nil
        // A close_notify (RFC 8446 §6.1) if the session is sound; never waited for.
        tls?.endOutput()
        releaseSocket()
    }

    /// Frees the socket and its events after a failed connect, keeping the buffers (the
    /// request already queued) for a connect to the next address.
    func dropSocket() {
        if socketState != .closed { socketState = .none }
        releaseSocket()
    }

    private func releaseSocket() {
        readTimeout = nil
        // The SSL object goes before its socket.
        tls = nil
        tlsWait = .none
        channel.close()
    }

    /// Who gets the events: the owner, else the handler. A strong reference for the call.
    private var receiver: UpstreamTransportHandler? { owner ?? handler }

}

// The channel holds this transport for each event's call (its retain rule), so a receiver
// that lets go of the transport meanwhile does not free it mid-call.
extension UpstreamTransport: SocketChannelHandler {
    func channelReadable(_ events: SocketEvents) {
        // Bytes (or an end) came: the idle time starts again.
        if let readTimeout { channel.setDeadline(readTimeout) }
        if tlsWait.readableRetriesWrite() {
            receiver?.transportWritable(self, timedOut: false)
        }
        receiver?.transportReadable(self, timedOut: false)
    }

    /// The read timeout passed.
    func channelDeadlinePassed() {
        receiver?.transportReadable(self, timedOut: true)
    }

    func channelWritable(_ events: SocketEvents) {
        if socketState == .connecting {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
            socketState = error == 0 ? .connected : .none
            receiver?.transportConnected(self, error: error)
        } else if events.contains(.writable) && tlsWait.writableRetriesRead() {
            receiver?.transportReadable(self, timedOut: false)
            if output.count > 0 { receiver?.transportWritable(self, timedOut: false) }
        } else {
            receiver?.transportWritable(self, timedOut: !events.contains(.writable))
        }
    }
}

// MARK: TLS

extension UpstreamTransport {
    /// Puts a TLS client session over the connected socket; `handshake()` then drives it.
    func startTLS(_ context: UpstreamTLSContext, slot: TLSSessionSlot) throws(ReactorError) {
        precondition(isConnected && tls == nil, "startTLS before connect, or twice")
        tls = try TLSConnectionIO.client(context: context, fd: fd, slot: slot)
    }

    /// One handshake step; on a WANT the caller arms the matching interest.
    func handshake() -> TLSHandshakeStep {
        guard let tls else { return .failed("no TLS session") }
        return tls.handshake()
    }

    fileprivate func fillTLS(_ tls: TLSConnectionIO) -> Fill {
        let read = tls.read(into: input, room: Self.readSize)
        switch read.stop {
        case .open: break
        case .buffered:
            // Decrypted bytes wait inside OpenSSL, which no readiness will announce: another
            // turn, but only while someone reads (a paused reader gets one on resume).
            if readArmed { activateRead() }
        case .needsWritable:
            tlsWait.readWantsWrite()
            if !armWrite(timeout: readTimeout) { return .failed(ENOMEM) }
        case .end:
            if read.bytes == 0 { return .eof }
        case .failed:
            if read.bytes == 0 { return .failed(EPROTO) }
        }
        return read.bytes > 0 ? .bytes(read.bytes) : .wouldBlock
    }

    fileprivate func flushTLS(_ tls: TLSConnectionIO, timeout: Double?) -> Flush {
        switch tls.write(from: output).stop {
        case .done: return .done
        case .blocked: return armWrite(timeout: timeout) ? .pending : .failed(ENOMEM)
        case .needsReadable:
            tlsWait.writeWantsRead()
            if !readArmed && !armRead(timeout: timeout) { return .failed(ENOMEM) }
            return .pending
        case .failed: return .failed(EPIPE)
        }
    }
}
