internal import CEvent
import Foundation

/// One libevent `event_base`, driven by exactly one thread. Other threads hand it work only
/// through `execute(_:)` (event_base_once, safe across threads once
/// `evthread_use_pthreads()` has run, which `EventLoop.initializeThreading()` does once).
public final class EventLoop: @unchecked Sendable {
    let base: OpaquePointer
    /// Scratch memory for tunnels relaying directly (`Tunnel`): read into, then written out
    /// in the same callback, so one per loop serves all its tunnels.
    let relayBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    /// Told of the fetches and Redis commands this loop's clients make (tracing); set before
    /// the loop runs, read on its thread.
    public var callObserver: (any OutboundCallObserver)?

    private static let threadingOnce: Void = {
        precondition(evthread_use_pthreads() == 0, "evthread_use_pthreads failed")
    }()

    /// Must run before any base is created; idempotent.
    public static func initializeThreading() { _ = threadingOnce }

    public init() {
        EventLoop.initializeThreading()
        guard let cfg = event_config_new() else { fatalError("event_config_new failed") }
        defer { event_config_free(cfg) }
        // Batch epoll interest changes per loop turn: an interest switched off and on again
        // within one turn (a connection's write event, a Redis bufferevent's read and write)
        // then costs no epoll_ctl system call.
        event_config_set_flag(cfg, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        // Cross-thread event_base_once needs the base's lock, so it stays enabled.
        guard let base = event_base_new_with_config(cfg) else { fatalError("event_base_new failed") }
        self.base = base
    }

    deinit {
        if let dns { evdns_base_free(dns, 0) }
        event_base_free(base)
        relayBuffer.deallocate()
    }

    /// Asynchronous DNS for upstream host names on this loop (resolv.conf), created on first
    /// use: without it libevent resolves with a blocking getaddrinfo on the worker thread.
    private var dns: OpaquePointer?
    var dnsBase: OpaquePointer? {
        if dns == nil { dns = evdns_base_new(base, Int32(EVDNS_BASE_INITIALIZE_NAMESERVERS)) }
        return dns
    }

    /// The thread running this loop (set by `run`): objects of the loop are used from it
    /// alone, which `assertInLoop` checks in debug builds.
    private var runner: pthread_t?

    /// Runs the loop until `stop()` or until no events remain.
    public func run() {
        runner = pthread_self()
        event_base_dispatch(base)
    }

    /// Asserts (debug builds) that the caller is on the thread running this loop. Before the
    /// loop first runs anyone may set things up, so nothing is checked then.
    public func assertInLoop(_ function: StaticString = #function) {
        assert(
            runner.map { pthread_equal($0, pthread_self()) != 0 } ?? true,
            "\(function) called off its event loop's thread")
    }

    /// Ends `run()` after the current callbacks (thread-safe).
    public func stop() { event_base_loopbreak(base) }

    /// Runs `work` on this loop's thread soon. Thread-safe.
    public func execute(_ work: @escaping () -> Void) {
        schedule(after: 0, work)
    }

    /// Runs `work` on this loop's thread after `seconds`. Thread-safe; one shot.
    public func schedule(after seconds: Double, _ work: @escaping () -> Void) {
        // Retained here, released by `onceThunk` when the callback runs.
        let box = Unmanaged.passRetained(ClosureBox(work)).toOpaque()
        var tv = timeval(seconds: seconds)
        if event_base_once(base, -1, Int16(EV_TIMEOUT), onceThunk, box, &tv) != 0 {
            Unmanaged<ClosureBox>.fromOpaque(box).release()
        }
    }
}

final class ClosureBox {
    let work: () -> Void
    init(_ work: @escaping () -> Void) { self.work = work }
}

private func onceThunk(_ fd: Int32, _ what: Int16, _ arg: UnsafeMutableRawPointer?) {
    let box = Unmanaged<ClosureBox>.fromOpaque(arg!).takeRetainedValue()
    box.work()
}

extension timeval {
    init(seconds: Double) {
        let whole = seconds.rounded(.down)
        self.init(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
    }
}
