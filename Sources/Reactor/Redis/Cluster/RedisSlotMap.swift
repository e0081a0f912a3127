/// Which master serves each of the 16384 slots, as `CLUSTER SLOTS` reports it, with the
/// updates `-MOVED` replies make. Nodes are kept once each; a slot holds a node's index.
struct RedisSlotMap {
    /// The masters serving at least one slot (or named by a `-MOVED`), by address.
    private(set) var nodes: [RedisEndpoint] = []
    /// A node index per slot; `unassigned` for a slot no master serves.
    private var owners = [UInt16](repeating: unassigned, count: RedisHashSlot.count)
    private static let unassigned = UInt16.max

    var isEmpty: Bool { nodes.isEmpty }

    /// The master serving `slot`, if the map knows one.
    func node(for slot: Int) -> RedisEndpoint? {
        let owner = owners[slot]
        return owner == Self.unassigned ? nil : nodes[Int(owner)]
    }

    /// `slot` is served by `node` from now on (after a `-MOVED`).
    mutating func assign(_ slot: Int, to node: RedisEndpoint) {
        owners[slot] = index(of: node)
    }

    private mutating func index(of node: RedisEndpoint) -> UInt16 {
        if let i = nodes.firstIndex(where: { $0.host == node.host && $0.port == node.port }) { return UInt16(i) }
        nodes.append(node)
        return UInt16(nodes.count - 1)
    }

    /// The map of a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id, …], replica…], …]`.
    /// An empty host means the answering node's host; `?` (an endpoint the node does not
    /// know) leaves the range unassigned. Nil for a reply of another shape or with no slot.
    /// `node` makes a node's endpoint (with the cluster's login) from its address.
    init?(clusterSlots reply: RedisReply, answeredBy: RedisEndpoint, node: (String, UInt16) -> RedisEndpoint) {
        guard case .array(let ranges) = reply else { return nil }
        for range in ranges {
            guard case .array(let fields) = range, fields.count >= 3,
                case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                0 <= start, start <= end, end < RedisHashSlot.count,
                case .array(let master) = fields[2], master.count >= 2,
                case .bulk(let hostBytes) = master[0], case .integer(let port) = master[1],
                (1...Int64(UInt16.max)).contains(port)
            else { return nil }
            var host = String(decoding: hostBytes, as: UTF8.self)
            if host == "?" { continue }
            if host.isEmpty { host = answeredBy.host }
            let owner = index(of: node(host, UInt16(port)))
            for slot in Int(start)...Int(end) { owners[slot] = owner }
        }
        guard !nodes.isEmpty else { return nil }
    }

    init() {}
}
