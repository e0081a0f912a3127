internal import CEvent

/// A timer event on one loop; fires `action` after `seconds`, once or repeatedly.
/// Owns its `struct event`; `cancel()` is idempotent and `deinit` frees the event.
/// Loop-thread only.
public final class LoopTimer {
    private var event: OpaquePointer?
    private let action: () -> Void
    private let seconds: Double

    /// `armed: false`: the timer waits for `start()`.
    public init(
        loop: EventLoop, seconds: Double, repeating: Bool = false, armed: Bool = true, _ action: @escaping () -> Void
    ) {
        loop.assertInLoop()
        self.action = action
        self.seconds = seconds
        let flags = Int16(repeating ? EV_PERSIST : 0)
        // Unretained: the Timer owns the event and frees it before it goes away.
        event = event_new(loop.base, -1, flags, timerThunk, Unmanaged.passUnretained(self).toOpaque())
        if armed { start() }
    }

    /// Arms the timer: it fires `seconds` from now. Does nothing while it is armed already,
    /// or after `cancel()`; a one-shot timer that has fired can be started again.
    public func start() {
        guard let event, event_pending(event, Int16(EV_TIMEOUT), nil) == 0 else { return }
        var tv = timeval(seconds: seconds)
        event_add(event, &tv)
    }

    public func cancel() {
        if let event {
            event_del(event)
            event_free(event)
        }
        event = nil
    }

    deinit { cancel() }

    /// Alive through its action, which may cancel and drop it.
    fileprivate func fire() { withExtendedLifetime(self) { action() } }
}

private func timerThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<LoopTimer>.fromOpaque(arg!).takeUnretainedValue().fire()
}
