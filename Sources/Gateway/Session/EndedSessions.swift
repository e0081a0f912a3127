import Foundation

/// Sessions ended by logout while their cookies may still exist (the embedded store: the
/// cookie itself is the session, so a copy of it stays well-formed). Remembered until the
/// session would have expired anyway; shared by every worker, under one lock (logouts and
/// lookups are rare next to requests: a lookup is one hash probe).
final class EndedSessions: @unchecked Sendable {
    private let lock = NSLock()
    private var until: [String: Int64] = [:]
    private let capacity: Int

    init(capacity: Int = 1_000_000) { self.capacity = capacity }

    func end(_ id: String, until expiry: Int64, now: Int64) {
        lock.withLock {
            if until.count >= capacity / 2 { until = until.filter { $0.value > now } }
            // Full of live entries: forgetting one would revive a logged-out cookie, so the
            // oldest-expiring is dropped only as a last resort (bounded memory first).
            if until.count >= capacity, let first = until.min(by: { $0.value < $1.value }) { until[first.key] = nil }
            until[id] = expiry
        }
    }

    func contains(_ id: String, now: Int64) -> Bool {
        lock.withLock { (until[id] ?? 0) > now }
    }

    /// Back-channel logouts: a mark (an AS session or a subject) and when it was logged out.
    private var marks: [String: (at: Int64, until: Int64)] = [:]

    func mark(_ key: String, at: Int64, until expiry: Int64, now: Int64) {
        lock.withLock {
            if marks.count >= capacity / 2 { marks = marks.filter { $0.value.until > now } }
            if marks.count < capacity { marks[key] = (max(at, marks[key]?.at ?? 0), expiry) }
        }
    }

    /// Whether `session` was begun before a back-channel logout of its sid or its subject.
    func loggedOut(_ session: Session, now: Int64) -> Bool {
        lock.withLock {
            // Checked on every request of a session: the keys are built only when some
            // back-channel logout is remembered at all.
            if marks.isEmpty { return false }
            let sid = session.claims["sid"]?.string.map { LogoutMarks.sid(session.client, $0) }
            let sub = LogoutMarks.sub(session.client, session.subject)
            for key in [sid, sub].compactMap({ $0 }) {
                if let m = marks[key], m.until > now, session.createdAt <= m.at { return true }
            }
            return false
        }
    }
}
