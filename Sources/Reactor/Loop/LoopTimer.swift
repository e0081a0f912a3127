/// A timer event on one loop; fires `action` after `seconds`, once or repeatedly.
/// Owns its `LoopEvent`; `cancel()` is idempotent and `deinit` cancels. Loop-thread only.
public final class LoopTimer {
    private var event: LoopEvent?
    private let action: () -> Void
    private let seconds: Double

    /// `armed: false`: the timer waits for `start()`.
    public init(
        loop: EventLoop, seconds: Double, repeating: Bool = false, armed: Bool = true, _ action: @escaping () -> Void
    ) {
        loop.assertInLoop()
        self.action = action
        self.seconds = seconds
        event = LoopEvent(base: loop.base, .timer, persist: repeating) { [unowned self] _ in fire() }
        if armed { start() }
    }

    /// Arms the timer: it fires `seconds` from now. Does nothing while it is armed already,
    /// or after `cancel()`; a one-shot timer that has fired can be started again.
    public func start() {
        guard let event, !event.timeoutPending else { return }
        event.add(timeout: seconds)
    }

    public func cancel() {
        event?.cancel()
        event = nil
    }

    deinit { cancel() }

    /// Alive through its action, which may cancel and drop it.
    private func fire() { withExtendedLifetime(self) { action() } }
}
