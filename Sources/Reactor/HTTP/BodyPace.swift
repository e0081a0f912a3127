/// How fast a request body must arrive: a total deadline and a minimum average rate after a
/// grace period. A body that pins a connection (and the upstream call it feeds) by trickling
/// bytes is cut off; a large upload at any real link's speed is not. The rate is Kestrel's
/// `MinRequestBodyDataRate` (bytes per second averaged from the first body byte asked for,
/// judged once the grace period has passed); the deadline is Envoy's `request_timeout` for
/// the body alone. Time the gateway itself held the body back (flow control from a slow
/// upstream) does not count against the rate: the client was not the slow side.
///
/// A pure value: `judge` says whether a body is on pace at a moment and when it must next be
/// looked at, so a connection needs one timer per body, never work per byte.
public struct BodyPace: Sendable, Equatable {
    /// Seconds a body may take, from the first read to its last byte; nil: no bound.
    public var deadline: Double?
    /// Bytes per second the body must average once `grace` has passed; 0: no floor.
    public var minRate: Int
    /// Seconds of reading before the rate is judged (a client's first packets, a slow start).
    public var grace: Double

    public init(deadline: Double? = nil, minRate: Int = 0, grace: Double = 5) {
        self.deadline = deadline
        self.minRate = minRate
        self.grace = grace
    }

    /// Whether the pace bounds anything at all.
    public var isActive: Bool { deadline != nil || minRate > 0 }

    public enum Verdict: Equatable, Sendable {
        /// On pace; look again after this many seconds (nil: never, nothing can fail).
        case onPace(checkIn: Double?)
        /// Past `deadline`.
        case pastDeadline
        /// Averaging under `minRate` after the grace period.
        case tooSlow
    }

    /// The body's state `elapsed` seconds after reading began, of which `active` were spent
    /// reading (not held back by the gateway), with `bytes` received so far.
    public func judge(elapsed: Double, active: Double, bytes: Int) -> Verdict {
        var next: Double?
        if let deadline {
            if elapsed >= deadline { return .pastDeadline }
            next = deadline - elapsed
        }
        if minRate > 0 {
            let due: Double
            if active < grace {
                due = grace - active
            } else {
                // Kestrel's rule: after the grace period the average since the start must
                // hold, bytes ≥ rate × active.
                if Double(bytes) < Double(minRate) * active { return .tooSlow }
                // With no more bytes the average reaches the floor at bytes / rate; looked at
                // no more than once a second (the timer, not the bytes, sets the cost).
                due = max(Double(bytes) / Double(minRate) - active, min(1, grace))
            }
            next = min(next ?? due, due)
        }
        return .onPace(checkIn: next)
    }
}
