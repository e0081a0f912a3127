import Synchronization

/// Disk the spools of one process may hold at once, shared by every worker: one budget for
/// spooled answers (`limits.spool_total`), one for request bodies (`request_spool_total`).
/// The request bodies' budget also keeps a share per client (`request_spool_per_client`):
/// the bytes one source holds count against both its share and the total, so that a few
/// clients trickling bodies cannot hold the whole budget and leave every other body a 503.
public final class SpoolBudget: Sendable {
    private let used = Atomic<Int>(0)
    private let made = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)
    public let limit: Int
    /// The most one source may hold (`limit`: no share of its own).
    public let perSource: Int
    /// Bytes held per source, for the sources that hold any. Taken only by spools with a
    /// source, once per chunk that goes to disk (a body past `request_buffer`).
    private let held = Mutex<[String: Int]>([:])

    public init(limit: Int, perSource: Int? = nil) {
        self.limit = limit
        self.perSource = min(perSource ?? limit, limit)
    }

    /// Bytes held by every spool now.
    public var inUse: Int { used.load(ordering: .relaxed) }
    /// Messages that were spooled, and spools that could not be made, written or read.
    public var spools: Int { made.load(ordering: .relaxed) }
    public var failures: Int { failed.load(ordering: .relaxed) }
    public func countFailure() { failed.add(1, ordering: .relaxed) }
    func countSpool() { made.add(1, ordering: .relaxed) }

    /// Whether `bytes` more could be held now for `source` (its share and the total): asked
    /// before a body is read, so that a body that cannot be held is refused before the client
    /// is told to send it (RFC 9110 §10.1.1). Not a reservation: another body may take the
    /// room meanwhile, and is then refused as it spools.
    public func hasRoom(_ bytes: Int, for source: String?) -> Bool {
        guard inUse + bytes <= limit else { return false }
        guard let source, perSource < limit else { return true }
        return held.withLock { $0[source, default: 0] } + bytes <= perSource
    }

    func reserve(_ n: Int, for source: String? = nil) -> Bool {
        guard let source, perSource < limit else { return reserveTotal(n) }
        return held.withLock { held in
            let mine = held[source, default: 0]
            guard mine + n <= perSource, reserveTotal(n) else { return false }
            held[source] = mine + n
            return true
        }
    }

    func release(_ n: Int, for source: String? = nil) {
        guard n > 0 else { return }
        used.subtract(n, ordering: .relaxed)
        guard let source, perSource < limit else { return }
        held.withLock { held in
            let left = held[source, default: 0] - n
            held[source] = left > 0 ? left : nil
        }
    }

    private func reserveTotal(_ n: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while current + n <= limit {
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + n, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }
}
