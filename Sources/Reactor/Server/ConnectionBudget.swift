import Synchronization

/// The client connections a process may hold, counted across every server that shares
/// the budget: each worker's `HTTPServer`s, on their own loops and their own SO_REUSEPORT
/// sockets. A server takes a slot before it opens a connection and gives it back when the
/// connection closes, so the number of open connections never passes `limit` whichever
/// worker the kernel hands the clients to.
///
/// Why one atomic count rather than a share per worker (what an even `limit / workers`
/// did): SO_REUSEPORT spreads clients by a hash of their addresses, not evenly, so a share
/// refused clients on one worker while another had room, and the documented limit was per
/// process. A count is one `compareExchange` per accept and one subtraction per close,
/// uncontended in practice (accepts are rare next to requests), from the standard
/// library's `Synchronization` module. No lock is taken on the request path.
///
/// At the limit a server reclaims its own oldest idle connection (`IdleConnectionList`)
/// and hands its slot to the newcomer. A server with no idle connection of its own asks a
/// peer to reclaim one (`askPeerToReclaim`): the peer closes its oldest idle connection on
/// its own loop, which frees a slot for whoever accepts next.
public final class ConnectionBudget: Sendable {
    private let inUse = Atomic<Int>(0)
    private let cap: Atomic<Int>
    private let peers = Mutex<[Peer]>([])
    private let nextPeer = Atomic<Int>(0)

    /// A server that can reclaim for others: its loop, and the server itself, read only on
    /// that loop (`@unchecked`: the weak reference is never touched off it).
    final class Peer: @unchecked Sendable {
        let loop: EventLoop
        weak var server: HTTPServer?

        init(loop: EventLoop, server: HTTPServer) {
            self.loop = loop
            self.server = server
        }
    }

    public init(limit: Int) {
        cap = Atomic(max(1, limit))
    }

    /// The most connections open at once (a reload may change it; connections already open
    /// above a lowered limit stay until they close).
    public var limit: Int {
        get { cap.load(ordering: .relaxed) }
        set { cap.store(max(1, newValue), ordering: .relaxed) }
    }

    /// Slots taken now.
    public var count: Int { inUse.load(ordering: .relaxed) }

    var hasRoom: Bool { count < limit }

    /// Takes a slot if one is free.
    func tryAcquire() -> Bool {
        var current = inUse.load(ordering: .relaxed)
        while current < cap.load(ordering: .relaxed) {
            let (done, seen) = inUse.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if done { return true }
            current = seen
        }
        return false
    }

    func release() {
        inUse.subtract(1, ordering: .relaxed)
    }

    func join(_ peer: Peer) {
        peers.withLock { $0.append(peer) }
    }

    func leave(_ peer: Peer) {
        peers.withLock { $0.removeAll { $0 === peer } }
    }

    /// Asks one other server (round robin) to close its oldest idle connection. Returns
    /// false when there is no other server to ask.
    @discardableResult
    func askPeerToReclaim(except me: Peer) -> Bool {
        let others = peers.withLock { list in list.filter { $0 !== me } }
        guard !others.isEmpty else { return false }
        let i = nextPeer.wrappingAdd(1, ordering: .relaxed).oldValue
        let peer = others[(i % others.count + others.count) % others.count]
        peer.loop.execute { peer.server?.reclaimForPeer() }
        return true
    }
}
