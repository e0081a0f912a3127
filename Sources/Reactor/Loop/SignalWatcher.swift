/// Delivers POSIX signals (SIGHUP, SIGTERM, …) as callbacks on one loop (evsignal).
public final class SignalWatcher {
    private var event: LoopEvent?
    private let action: () -> Void

    public init(loop: EventLoop, signal: Int32, _ action: @escaping () -> Void) {
        self.action = action
        event = LoopEvent(base: loop.base, .signal(signal), persist: true) { [unowned self] _ in action() }
        event?.add()
    }

    public func cancel() {
        event?.cancel()
        event = nil
    }

    deinit { cancel() }
}
