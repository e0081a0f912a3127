internal import CEvent
import Glibc

/// One libevent event on one loop that is not a socket channel's (`SocketChannel` keeps its
/// three itself, on the request path): a timer, a signal, a wake-up pipe, a socket curl
/// watches. Owns its `struct event`: made in `init`, freed once by `cancel()` or `deinit`.
///
/// libevent holds it unretained: its owner holds it and cancels it before it goes. The
/// callback runs on the loop thread with the event held for the call, so an owner that
/// drops the event in it (a one-shot timer's action) does not free it mid-call. The
/// callback must not hold the owner strongly (the owner holds the event): capture it
/// `unowned`.
final class LoopEvent {
    enum Source {
        case timer
        /// A POSIX signal (evsignal).
        case signal(Int32)
        /// Readiness of `fd`, which the event does not own.
        case socket(Int32, SocketEvents)
    }

    private var event: OpaquePointer?
    private let fire: (SocketEvents) -> Void

    /// `persist`: stays added after it fires (until `delete` or `cancel`). Nil if libevent
    /// could not make the event (out of memory).
    init?(base: OpaquePointer, _ source: Source, persist: Bool, _ fire: @escaping (SocketEvents) -> Void) {
        self.fire = fire
        let fd: Int32
        var flags = persist ? Int16(EV_PERSIST) : 0
        switch source {
        case .timer:
            fd = -1
        case .signal(let number):
            fd = number
            flags |= Int16(EV_SIGNAL)
        case .socket(let socket, let kinds):
            fd = socket
            flags |= kinds.rawValue
        }
        guard let event = event_new(base, fd, flags, loopEventThunk, Unmanaged.passUnretained(self).toOpaque())
        else { return nil }
        self.event = event
    }

    deinit { cancel() }

    /// Adds the event (again): with `timeout`, it fires that long from now if nothing else
    /// made it fire; adding an added event restarts its timeout. False if libevent refused.
    @discardableResult
    func add(timeout: Double? = nil) -> Bool {
        guard let event else { return false }
        guard let timeout else { return event_add(event, nil) == 0 }
        var tv = timeval(seconds: timeout)
        return event_add(event, &tv) == 0
    }

    /// Takes the event off the loop until it is added again.
    func delete() {
        if let event { event_del(event) }
    }

    /// Whether a timeout is pending (a timer that is armed).
    var timeoutPending: Bool {
        guard let event else { return false }
        return event_pending(event, Int16(EV_TIMEOUT), nil) != 0
    }

    /// Frees the event; idempotent. No callback follows.
    func cancel() {
        guard let event else { return }
        self.event = nil
        event_free(event)
    }

    fileprivate func fired(_ what: Int16) { fire(SocketEvents(rawValue: what)) }
}

private func loopEventThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<LoopEvent>.fromOpaque(arg!).takeUnretainedValue().fired(what)
}
