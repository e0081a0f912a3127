internal import CEvent
import Glibc

/// What a socket's event reported (libevent's `what`).
struct SocketEvents: OptionSet {
    let rawValue: Int16
    /// The event's timeout passed before the socket was ready.
    static let timeout = SocketEvents(rawValue: Int16(EV_TIMEOUT))
    static let readable = SocketEvents(rawValue: Int16(EV_READ))
    static let writable = SocketEvents(rawValue: Int16(EV_WRITE))
    /// The peer's FIN (EPOLLRDHUP); reported to an edge watch only (`EdgeTriggered`).
    static let peerEnded = SocketEvents(rawValue: Int16(EV_CLOSED))
}

/// What a `SocketChannel` tells its owner, on the loop thread.
protocol SocketChannelHandler: AnyObject {
    func channelReadable(_ events: SocketEvents)
    /// Writable, a scheduled write's turn, or (`.timeout`) a write that waited too long.
    func channelWritable(_ events: SocketEvents)
    /// The deadline set with `setDeadline` passed.
    func channelDeadlinePassed()
}

/// One non-blocking socket on one loop and what watches it: the fd, its read and write
/// events, the one deadline timer, and the close (swift-nio's `BaseSocketChannel` plays
/// this part). The client connection (`ServerConnection`: linger, the idle list, the
/// protocol handler) and the upstream one (`UpstreamTransport`: connect, TLS, ALPN) are
/// policies over it; it is the one place outside the loop and the listener that makes
/// libevent events.
///
/// **The one retain rule.** libevent holds the channel unretained: its owner holds it, and
/// `close()` (also run by `deinit`) frees the events before anything else, so no callback
/// reaches a freed channel. The owner is the channel's handler, held unowned; each event
/// holds the handler for the length of its call, so a handler that lets go of itself
/// meanwhile (a connection that closes) goes after the call, not in it.
///
/// Interest is kept as state, so that asking for what is already so costs no system call:
/// read interest on or off; the write event idle, scheduled for this turn (activated by
/// hand: queued output goes out in one write at the end of the turn) or armed (waiting for
/// the socket). Loop-thread only.
final class SocketChannel {
    /// How readiness is watched (`EdgeTriggered` says why both exist).
    enum Watch {
        case edge
        case level
    }

    private enum WriteUse {
        case idle
        case scheduled
        case armed
    }

    // Unchecked exclusivity on the state below that every request reads and writes: loop-
    // thread only, never accessed across a call out that could touch it too; the dynamic
    // check cost a runtime call per access (debug and TSan builds still check).
    @exclusivity(unchecked) unowned(unsafe) var handler: SocketChannelHandler?
    private let base: OpaquePointer
    /// -1 when none (before `attach`, after `close`).
    private(set) var fd: Int32 = -1
    private(set) var watch = Watch.level
    /// The write event persists until disarmed (a client connection's), or fires once, with
    /// its timeout (an upstream's).
    private var writePersists = false
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    private var timerEvent: OpaquePointer?
    @exclusivity(unchecked) private(set) var readArmed = false
    @exclusivity(unchecked) private var writeUse = WriteUse.idle
    /// The one deadline, over `timerEvent` (moving it per request costs no timer update).
    @exclusivity(unchecked) private var deadline = LazyDeadline()

    init(base: OpaquePointer) { self.base = base }

    deinit { close() }

    /// Whether the loop's backend reports edges and the peer's FIN (`EdgeTriggered`).
    static func edgeSupported(base: OpaquePointer) -> Bool { EdgeTriggered.supported(base) }

    var isOpen: Bool { fd >= 0 }
    var writeArmed: Bool { writeUse == .armed }
    var writeScheduled: Bool { writeUse == .scheduled }

    /// Takes `fd` (non-blocking) and makes its events; false if libevent could not (the
    /// fd is still taken: `close()` closes it).
    func attach(_ fd: Int32, watch: Watch, writePersists: Bool) -> Bool {
        precondition(self.fd < 0, "a channel holds one socket at a time")
        self.fd = fd
        self.watch = watch
        self.writePersists = writePersists
        // Unretained: see the retain rule above.
        let arg = Unmanaged.passUnretained(self).toOpaque()
        timerEvent = event_new(base, -1, 0, timerThunk, arg)
        return makeSocketEvents(arg, reportingPeerEnd: false) && timerEvent != nil
    }

    /// `reportingPeerEnd`: a level watch asks for `EV_CLOSED` too (a tunnel's, which has no
    /// deadline to bound a peer that went away); an edge watch always does.
    /// A new non-blocking TCP socket of `family`, without Nagle's delay (request heads must
    /// not wait for it), attached by level with a one-shot write event (an upstream's: see
    /// `EdgeTriggered`). 0, or the errno that stopped it (the fd, if made, is taken: `close()`).
    func openStream(family: Int32) -> Int32 {
        let s = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { return errno }
        guard attach(s, watch: .level, writePersists: false) else { return ENOMEM }
        var one: Int32 = 1
        guard setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            return errno
        }
        return 0
    }

    private func makeSocketEvents(_ arg: UnsafeMutableRawPointer, reportingPeerEnd: Bool) -> Bool {
        let edge = watch == .edge
        let readFlags =
            Int16(EV_READ | EV_PERSIST) | (edge ? EdgeTriggered.readFlags : reportingPeerEnd ? Int16(EV_CLOSED) : 0)
        let writeFlags =
            Int16(EV_WRITE) | (writePersists ? Int16(EV_PERSIST) : 0) | (edge ? EdgeTriggered.writeFlags : 0)
        readEvent = event_new(base, fd, readFlags, readThunk, arg)
        writeEvent = event_new(base, fd, writeFlags, writeThunk, arg)
        return readEvent != nil && writeEvent != nil
    }

    // MARK: direct reads and writes

    /// One `send` of `bytes` (`MSG_NOSIGNAL`: a peer that is gone is an error code, not
    /// SIGPIPE): the count sent, or -1 with `errno` set.
    func send(_ bytes: UnsafeRawBufferPointer) -> Int {
        Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    }

    // MARK: interest

    /// Read interest on or off (no system call when unchanged); false if libevent refused.
    @discardableResult
    func setReadInterest(_ on: Bool) -> Bool {
        guard on != readArmed, let readEvent else { return on == readArmed }
        if on {
            guard event_add(readEvent, nil) == 0 else { return false }
        } else {
            event_del(readEvent)
        }
        readArmed = on
        return true
    }

    /// A read turn on this loop iteration with nothing new on the socket (bytes the socket
    /// will not announce: read ahead by TLS, or left by an edge).
    func activateRead() {
        if let readEvent { event_active(readEvent, Int32(EV_READ), 0) }
    }

    /// Waits for the socket to take output; with `timeout`, `channelWritable(.timeout)`
    /// follows if it does not in time. Arming again restarts the timeout. False if libevent
    /// refused.
    func armWrite(timeout: Double? = nil) -> Bool {
        guard let writeEvent else { return false }
        let added: Int32
        if let timeout {
            var tv = timeval(seconds: timeout)
            added = event_add(writeEvent, &tv)
        } else {
            added = event_add(writeEvent, nil)
        }
        guard added == 0 else { return false }
        writeUse = .armed
        return true
    }

    /// Stops waiting for writable; also drops a scheduled write (libevent's delete ends both).
    func disarmWrite() {
        guard writeUse != .idle, let writeEvent else { return }
        writeUse = .idle
        event_del(writeEvent)
    }

    /// A write turn later in this loop iteration (`channelWritable(.writable)`), so that
    /// what several callbacks queue goes out in one write. Nothing if the write event is
    /// already scheduled or armed.
    func scheduleWrite() {
        guard writeUse == .idle, let writeEvent else { return }
        writeUse = .scheduled
        event_active(writeEvent, Int32(EV_WRITE), 0)
    }

    /// Watches the socket by level from now on, the peer's end reported as an edge watch
    /// reports it. libevent takes no mix of both kinds on one fd: both socket events are
    /// made again, with the interest they had. False if libevent could not.
    func watchByLevel() -> Bool {
        guard watch == .edge, fd >= 0 else { return true }
        for event in [readEvent, writeEvent] { if let event { event_free(event) } }
        watch = .level
        let arg = Unmanaged.passUnretained(self).toOpaque()
        guard makeSocketEvents(arg, reportingPeerEnd: true), let readEvent, let writeEvent else {
            return false
        }
        // The loop's changelist makes one epoll_ctl of a turn's changes on an fd, edge-
        // triggered if any change came from an edge event (the frees above). Each kind is
        // changed once more by a level event, an add then a delete when not wanted, so that
        // none of those is left.
        event_add(readEvent, nil)
        if !readArmed { event_del(readEvent) }
        event_add(writeEvent, nil)
        if writeUse != .armed {
            event_del(writeEvent)
            if writeUse == .scheduled { event_active(writeEvent, Int32(EV_WRITE), 0) }
        }
        return true
    }

    // MARK: the deadline

    /// Sets the one deadline (replacing any), or clears it with nil.
    func setDeadline(_ seconds: Double?) {
        guard let timerEvent else { return }
        deadline.set(seconds, event: timerEvent)
    }

    /// Clears the deadline and forgets the armed timer, whose next firing is ignored (no
    /// timer-heap update now).
    func dropDeadline() { deadline.disarmed() }

    // MARK: closing

    /// Frees the events and closes the fd; idempotent. No handler call follows. The channel
    /// may `attach` another socket after (an upstream's next address).
    func close() {
        for event in [readEvent, writeEvent, timerEvent] { if let event { event_free(event) } }
        readEvent = nil
        writeEvent = nil
        timerEvent = nil
        readArmed = false
        writeUse = .idle
        deadline.disarmed()
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    // MARK: events

    fileprivate func readable(_ what: Int16) {
        // Held for the call: the handler may let go of itself (and this channel) in it.
        guard let handler else { return }
        handler.channelReadable(SocketEvents(rawValue: what))
    }

    fileprivate func writable(_ what: Int16) {
        if writeUse == .scheduled || !writePersists { writeUse = .idle }
        guard let handler else { return }
        handler.channelWritable(SocketEvents(rawValue: what))
    }

    fileprivate func timerFired() {
        guard let timerEvent, deadline.fired(event: timerEvent), let handler else { return }
        handler.channelDeadlinePassed()
    }
}

/// Plain client sockets are watched by edge (EPOLLET), as nginx watches them. Level-triggered,
/// epoll looks again at every socket it reported, on the next wait, to see whether it is
/// still readable: two more socket polls a proxied request, and more wake-ups (perf put
/// epoll's share at 0.46 µs a request against nginx's 0.28).
///
/// An edge is reported once, so a reader must not stop while bytes may still be waiting:
/// - a read that took all the room it asked for may have left more: the reader reads again
///   on the next loop turn (`event_active`), as level-triggering would have made it;
/// - a shorter read emptied the socket, except that the peer's FIN can have come with the
///   last bytes, in the same edge. `EV_CLOSED` (EPOLLRDHUP) says it did; from then on
///   every read that got bytes is followed by one more, which sees the end.
/// - A reader that pauses deletes its read event; adding it again makes epoll look at
///   the socket at once (EPOLL_CTL_ADD/MOD), so bytes that came meanwhile are reported.
///
/// What an edge does not tell: libevent 2.1 reports EPOLLERR as plain `EV_READ | EV_WRITE`,
/// without `EV_CLOSED`, so a reset (RST) that comes in the same edge as the last bytes is
/// not seen until a write fails or a deadline passes. From a client that is a client that
/// stalls, which the header, body and idle deadlines already bound; a tunnel has no such
/// deadline, so a client socket is watched by level once it carries one
/// (`ServerConnection.watchByLevel`). From an upstream it would hold an answer whose body
/// ends with the connection until the response timeout, so upstream sockets stay
/// level-triggered. TLS sockets do too: OpenSSL reads records ahead,
/// and its `SSL_read` leaves the socket on its own terms. libevent refuses to mix both
/// kinds on one fd, so a socket's read and write events are either both edge-triggered or
/// neither.
enum EdgeTriggered {
    /// Whether `base`'s backend reports edges and the peer's FIN (epoll does; the others
    /// libevent may fall back to do not).
    static func supported(_ base: OpaquePointer) -> Bool {
        let wanted = Int32(EV_FEATURE_ET.rawValue | EV_FEATURE_EARLY_CLOSE.rawValue)
        return Int32(event_base_get_features(base)) & wanted == wanted
    }

    static let readFlags = Int16(EV_ET | EV_CLOSED)
    static let writeFlags = Int16(EV_ET)

    /// The callback's `what` says the peer sent its FIN.
    static func peerEnded(_ what: Int16) -> Bool { what & Int16(EV_CLOSED) != 0 }
}

// The thunks borrow the channel without a count: its owner keeps it (the retain rule).
private func readThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<SocketChannel>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.readable(what) }
}

private func writeThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<SocketChannel>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.writable(what) }
}

private func timerThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<SocketChannel>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.timerFired() }
}
