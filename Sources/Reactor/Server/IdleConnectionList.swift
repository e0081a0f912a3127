/// A node's place in an `IdleConnectionList`: kept inside the node (an intrusive list), so
/// joining and leaving cost a few pointer writes and no allocation.
///
/// The links are unretained (`Unmanaged`): the list never keeps a node alive. That is sound
/// because a node leaves the list before its owner lets it go (`HTTPServer.closed`
/// removes a connection from the list before dropping it from its table). Unmanaged rather
/// than `unowned(unsafe)`: a neighbour is written through without ever becoming a strong
/// reference, where reading an `unowned(unsafe)` link into a local retained and released it,
/// atomically, each time a connection joined or left (twice a keep-alive request).
struct IdleLinks<Node: AnyObject> {
    var older: Unmanaged<Node>?
    var newer: Unmanaged<Node>?
    var isLinked = false

    init() {}
}

/// What an `IdleConnectionList` can hold: a class that carries its own links.
protocol IdleListNode: AnyObject {
    var idleLinks: IdleLinks<Self> { get set }
}

/// The connections a server may close to make room for a new one, oldest idle first:
/// those that have sent no byte of a request head yet, and keep-alive connections between
/// requests (nginx's "reusable" connections, `ngx_reusable_connection`). A connection
/// joins at the newer end when it becomes idle and leaves when a byte arrives or it
/// closes, so the older end is always the one idle the longest. Every operation is O(1),
/// which keeps the accept path O(1) at the connection cap (no scan of the connections).
/// Loop-thread only, like the connections it links.
final class IdleConnectionList<Node: IdleListNode> {
    /// The two ends, unretained like the links (see `IdleLinks`).
    private var oldestLink: Unmanaged<Node>?
    private var newestLink: Unmanaged<Node>?
    private(set) var count = 0

    init() {}

    var isEmpty: Bool { count == 0 }

    /// Idle the longest: reclaimed first.
    var oldest: Node? { oldestLink?.takeUnretainedValue() }

    /// Puts `node` at the newer end, or leaves it where it is when it is already idle (its
    /// idle time runs from when it became idle, not from the last time it was told so).
    func append(_ node: Node) {
        guard !node.idleLinks.isLinked else { return }
        let link = Unmanaged.passUnretained(node)
        node.idleLinks.isLinked = true
        node.idleLinks.older = newestLink
        node.idleLinks.newer = nil
        if let newestLink {
            newestLink._withUnsafeGuaranteedRef { $0.idleLinks.newer = link }
        } else {
            oldestLink = link
        }
        newestLink = link
        count += 1
    }

    /// Takes `node` out, if it is in.
    func remove(_ node: Node) {
        guard node.idleLinks.isLinked else { return }
        let older = node.idleLinks.older
        let newer = node.idleLinks.newer
        if let older { older._withUnsafeGuaranteedRef { $0.idleLinks.newer = newer } } else { oldestLink = newer }
        if let newer { newer._withUnsafeGuaranteedRef { $0.idleLinks.older = older } } else { newestLink = older }
        node.idleLinks = IdleLinks()
        count -= 1
    }

    /// Joins or leaves as `idle` says (no change when it already agrees).
    func set(_ node: Node, idle: Bool) {
        if idle { append(node) } else { remove(node) }
    }

    /// Takes out and returns the connection idle the longest.
    func popOldest() -> Node? {
        guard let node = oldest else { return nil }
        remove(node)
        return node
    }
}
