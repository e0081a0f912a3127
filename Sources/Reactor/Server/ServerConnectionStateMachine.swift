/// The life of one client connection as states rather than flags: open, finishing (the
/// handler is done; the output goes out first), lingering (FIN sent, the client's last bytes
/// read and dropped), closed; beside it what the peer said (its FIN) and what TLS waits for
/// (`TLSWait`). Each event is a `mutating func` that returns what the connection does
/// next; the machine touches no socket or event, so every transition is unit-tested on its
/// own (`ServerConnectionStateMachineTests`). `ServerConnection` does what the actions say.
struct ServerConnectionStateMachine {
    enum Life: Equatable {
        case open
        /// The handler is done; once the output is written, the connection lingers
        /// (`linger`: the client may still be sending) or closes.
        case finishing(linger: Bool)
        /// The handler is detached and the write side shut down: what the client still sends
        /// is dropped until it closes or the linger time passes (RFC 9112 §9.6).
        case lingering
        case closed
    }

    /// What the peer has said of its end.
    enum Peer: Equatable {
        case open
        /// Its FIN was reported with readiness (`EV_CLOSED`, edge-triggered only): it may
        /// have come with the last bytes, so a read that got bytes is followed by one more.
        case ending
        /// A read saw the end of its stream.
        case closed
    }

    /// What `finish` leaves the connection to do.
    enum FinishAction: Equatable {
        /// Already finishing, lingering or closed.
        case none
        /// The output is out: stop writing now (`stopWriting`).
        case stopWriting
        /// Write what is queued first; `outputWritten` says when it is out.
        case flush
    }

    /// What the connection does once its output is out (or at once when none was left),
    /// after detaching its handler.
    enum StopWritingAction: Equatable {
        case close
        /// Shut down the write side, then read and drop until the peer closes or the linger
        /// time passes.
        case linger
    }

    /// What a passed deadline, or the peer's end, means now.
    enum EndAction: Equatable {
        /// The handler hears it (a request timed out, the client closed its side).
        case tellHandler
        /// Lingering was waiting for exactly this: close.
        case close
        /// Closed already: nothing.
        case none
    }

    private(set) var life = Life.open
    private(set) var peer = Peer.open
    /// What TLS waits for (`.none` on plain connections).
    var tls = TLSWait.none

    var isClosed: Bool {
        if case .closed = life { return true }
        return false
    }
    var isLingering: Bool {
        if case .lingering = life { return true }
        return false
    }
    /// The handler still owns the connection: neither finishing nor past it.
    var isOpen: Bool {
        if case .open = life { return true }
        return false
    }
    var peerClosed: Bool { peer == .closed }
    var peerEnding: Bool { peer == .ending }

    // MARK: The peer

    /// Readiness came with the peer's FIN.
    mutating func peerFINReported() {
        if peer == .open { peer = .ending }
    }

    /// A read saw the end of the peer's stream.
    mutating func peerEnded() -> EndAction {
        peer = .closed
        switch life {
        case .closed: return .none
        case .lingering: return .close
        case .open, .finishing: return .tellHandler
        }
    }

    // MARK: Closing

    /// The handler is done with the connection. `linger`: the client may still be sending
    /// (an unread body, pipelined bytes), so close in stages.
    mutating func finish(linger: Bool, outputPending: Bool) -> FinishAction {
        guard life == .open else { return .none }
        life = .finishing(linger: linger)
        return outputPending ? .flush : .stopWriting
    }

    /// A flush left `outputPending` bytes queued. true: a finishing connection's output is
    /// out, so it stops writing now.
    func outputWritten(outputPending: Bool) -> Bool {
        guard case .finishing = life else { return false }
        return !outputPending
    }

    /// The finishing connection's output is out: it lingers only when asked to and the peer
    /// has not closed (there is nothing left to read from a peer that has).
    mutating func stopWriting() -> StopWritingAction {
        guard case .finishing(let linger) = life else { return .close }
        life = .lingering
        return linger && peer != .closed ? .linger : .close
    }

    /// The deadline passed.
    func deadlinePassed() -> EndAction {
        switch life {
        case .closed: .none
        case .lingering: .close
        case .open, .finishing: .tellHandler
        }
    }

    /// Closes, once. false: it already was.
    mutating func close() -> Bool {
        guard life != .closed else { return false }
        life = .closed
        return true
    }
}
