internal import CEvent
import Glibc

/// Delivers POSIX signals (SIGHUP, SIGTERM, …) as callbacks on one loop (evsignal).
public final class SignalWatcher {
    private var event: OpaquePointer?
    private let action: () -> Void

    public init(loop: EventLoop, signal: Int32, _ action: @escaping () -> Void) {
        self.action = action
        // Unretained: the watcher owns the event and frees it in `cancel()`.
        event = event_new(
            loop.base, signal, Int16(EV_SIGNAL | EV_PERSIST), signalThunk,
            Unmanaged.passUnretained(self).toOpaque())
        event_add(event, nil)
    }

    public func cancel() {
        if let event {
            event_del(event)
            event_free(event)
        }
        event = nil
    }

    deinit { cancel() }

    fileprivate func fire() { action() }
}

private func signalThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<SignalWatcher>.fromOpaque(arg!).takeUnretainedValue().fire()
}
