internal import CEvent
import Foundation
import Synchronization

/// One libevent `event_base`, driven by exactly one thread. The base runs without libevent's
/// lock: with it, every `event_add`, `event_del` and `event_active` and every callback took
/// and gave back a mutex, five times a proxied request. So no other thread may call into
/// the base; they hand the loop work through `execute(_:)` and `schedule(after:_:)`, which
/// go through a `LoopMailbox` when called off the loop's thread.
public final class EventLoop: @unchecked Sendable {
    let base: OpaquePointer
    /// Scratch memory for tunnels relaying directly (`Tunnel`): read into, then written out
    /// in the same callback, so one per loop serves all its tunnels.
    let relayBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    /// Told of the fetches and Redis commands this loop's clients make (tracing); set before
    /// the loop runs, read on its thread.
    public var callObserver: (any OutboundCallObserver)?
    private let mailbox: LoopMailbox
    /// The thread running this loop (`pthread_t`, set by `run`; 0 before): the one thread
    /// that may call into the base.
    private let runner = Atomic<UInt>(0)

    private static let threadingOnce: Void = {
        // Each base opts out of its own lock (below); what libevent shares across bases
        // (signal handling, evdns) is still locked.
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
        event_config_set_flag(cfg, Int32(EVENT_BASE_FLAG_NOLOCK.rawValue))
        guard let base = event_base_new_with_config(cfg) else { fatalError("event_base_new failed") }
        self.base = base
        mailbox = LoopMailbox(base: base) { after, work in Self.once(base, after: after, work) }
    }

    deinit {
        mailbox.close()
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

    /// Runs the loop until `stop()`. (The mailbox's event keeps it from ending when no other
    /// event is left.)
    public func run() {
        runner.store(UInt(pthread_self()), ordering: .releasing)
        event_base_dispatch(base)
    }

    /// Whether the caller is the thread running this loop.
    private var onLoopThread: Bool { runner.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Asserts (debug builds) that the caller is on the thread running this loop. Before the
    /// loop first runs anyone may set things up, so nothing is checked then.
    public func assertInLoop(_ function: StaticString = #function) {
        assert(
            runner.load(ordering: .acquiring) == 0 || onLoopThread,
            "\(function) called off its event loop's thread")
    }

    /// Ends `run()` after the current callbacks (thread-safe).
    public func stop() {
        if onLoopThread {
            event_base_loopbreak(base)
        } else {
            mailbox.post(after: 0) { [base] in event_base_loopbreak(base) }
        }
    }

    /// Runs `work` on this loop's thread soon. Thread-safe. On the loop's thread, `work` runs
    /// in this turn, after the callbacks of the events already ready: libevent makes a
    /// zero-delay `event_base_once` active at once, behind them in the queue, and runs that
    /// queue until it is empty. So what several of them ask for can go out together.
    public func execute(_ work: @escaping () -> Void) {
        schedule(after: 0, work)
    }

    /// Runs `work` on this loop's thread after `seconds`. Thread-safe; one shot. Off the
    /// loop's thread (and before the loop runs) the work goes by the mailbox.
    public func schedule(after seconds: Double, _ work: @escaping () -> Void) {
        if onLoopThread {
            Self.once(base, after: seconds, work)
        } else {
            mailbox.post(after: seconds, work)
        }
    }

    /// Loop thread: a one-shot timer event that runs `work`.
    private static func once(_ base: OpaquePointer, after seconds: Double, _ work: @escaping () -> Void) {
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
