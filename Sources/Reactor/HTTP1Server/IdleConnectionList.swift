/// A node's place in an `IdleConnectionList`: kept inside the node (an intrusive list), so
/// joining and leaving cost a few pointer writes and no allocation.
///
/// The links are `unowned(unsafe)`: the list never keeps a node alive. That is sound
/// because a node leaves the list before its owner lets it go (`HTTP1Server.closed`
/// removes a connection from the list before dropping it from its table).
struct IdleLinks<Node: AnyObject> {
    unowned(unsafe) var older: Node?
    unowned(unsafe) var newer: Node?
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
    /// Idle the longest: reclaimed first.
    private(set) unowned(unsafe) var oldest: Node?
    private unowned(unsafe) var newest: Node?
    private(set) var count = 0

    init() {}

    var isEmpty: Bool { count == 0 }

    /// Puts `node` at the newer end, or leaves it where it is when it is already idle (its
    /// idle time runs from when it became idle, not from the last time it was told so).
    func append(_ node: Node) {
        guard !node.idleLinks.isLinked else { return }
        node.idleLinks.isLinked = true
        node.idleLinks.older = newest
        node.idleLinks.newer = nil
        if let newest { newest.idleLinks.newer = node } else { oldest = node }
        newest = node
        count += 1
    }

    /// Takes `node` out, if it is in.
    func remove(_ node: Node) {
        guard node.idleLinks.isLinked else { return }
        let older = node.idleLinks.older
        let newer = node.idleLinks.newer
        if let older { older.idleLinks.newer = newer } else { oldest = newer }
        if let newer { newer.idleLinks.older = older } else { newest = older }
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
