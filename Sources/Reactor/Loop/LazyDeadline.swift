internal import CEvent
import Glibc

/// One deadline of a connection that moves on every request and is rarely reached (the
/// keep-alive idle time, the wait for a response): moving it only notes the new time. The
/// libevent timer under it is armed no later than the deadline, and when it fires before
/// the deadline (the deadline moved on, or went away) it is armed again for the rest. A
/// keep-alive request then costs no timer-heap update, where arming the timer anew each
/// time cost two or three.
///
/// The timer event belongs to the owner, which calls `fired()` from its callback and acts
/// only when that says the deadline passed. Time is CLOCK_MONOTONIC_COARSE (a few
/// milliseconds of resolution, read without a system call): deadlines here are seconds.
/// Loop-thread only.
struct LazyDeadline {
    /// When the deadline passes (monotonic seconds); nil: none.
    private var deadline: Double?
    /// When the armed timer fires; nil: not armed.
    private var armedFor: Double?

    init() {}

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Whether a deadline is set.
    var isSet: Bool { deadline != nil }

    /// A deadline `seconds` from now, or none (nil). Arms `event` only when nothing armed
    /// would fire by then.
    mutating func set(_ seconds: Double?, event: OpaquePointer) {
        guard let seconds else {
            deadline = nil
            return
        }
        let now = Self.now()
        let at = now + seconds
        deadline = at
        if let armed = armedFor, armed <= at { return }
        arm(event, at: at, now: now)
    }

    /// The owner's timer fired: true if the deadline has passed (it is then cleared), false
    /// if there is none or it moved on (the timer is then armed again for the rest).
    mutating func fired(event: OpaquePointer) -> Bool {
        armedFor = nil
        guard let at = deadline else { return false }
        let now = Self.now()
        // The coarse clock may read a tick behind the timer that woke us: a deadline a few
        // milliseconds off is reached.
        if at - now > 0.005 {
            arm(event, at: at, now: now)
            return false
        }
        deadline = nil
        return true
    }

    /// Forgets the armed timer (the owner deleted the event or is about to free it).
    mutating func disarmed() {
        armedFor = nil
        deadline = nil
    }

    private mutating func arm(_ event: OpaquePointer, at: Double, now: Double) {
        var tv = timeval(seconds: max(0, at - now))
        event_add(event, &tv)
        armedFor = at
    }
}
