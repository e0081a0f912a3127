import Reactor

/// The `path_template:` rules of the routes that share one host rule, as a trie by segment:
/// each node has its literal children (one table for the whole trie, keyed by the segment and
/// the node), at most one child for a `{name}`, and the routes whose template ends there or
/// takes the rest of the path there (`{name*}`).
///
/// A lookup walks the path's segments down every branch they fit — a literal child and the
/// variable child both, since a template with fewer literals may still be the only one that
/// matches further on — and keeps the best route it meets. Each trie node stands for one
/// sequence of edges, so a path visits each node at most once: the cost follows the size of
/// the templates the path fits, not the number of routes; nothing is allocated.
///
/// "Best" is the order `Router` documents: more literal segments, then no `{name*}`, then
/// fewer variables (`PathTemplate.rank`), then a method list before none, then config order.
/// That order is fixed at build time as each candidate's `order`, so comparing two matches
/// costs one integer comparison.
struct TemplateTable: Sendable {
    struct Candidate: Sendable {
        let methods: MethodSet
        let index: Int32
        /// Position in the precedence order above: lower wins.
        let order: Int32
    }

    private struct Node: Sendable {
        /// The `{name}` child, or -1.
        var variable: Int32 = -1
        /// Routes whose template ends at this node, best first (ranges of `candidates`).
        var end: Range<Int32> = 0..<0
        /// Routes whose template's `{name*}` follows this node, best first.
        var rest: Range<Int32> = 0..<0
    }

    private let nodes: [Node]
    /// (segment bytes, then the parent node's 4 bytes) → the child node. The segment comes
    /// first so that a lookup hashes it once per depth and adds only the node per probe.
    private let literals: ByteKeyTable<Int32>
    private let candidates: [Candidate]

    /// `routes`: the template routes of one host rule.
    init(_ routes: [(template: PathTemplate, candidate: PathTable.Candidate, hasMethods: Bool)]) {
        // The precedence order, once: rank, then a method list, then config order.
        let sorted = routes.indices.sorted { a, b in
            let (x, y) = (routes[a], routes[b])
            if x.template.rank != y.template.rank {
                return y.template.rank.lexicographicallyPrecedes(x.template.rank)
            }
            if x.hasMethods != y.hasMethods { return x.hasMethods }
            return x.candidate.index < y.candidate.index
        }
        var order = [Int32](repeating: 0, count: routes.count)
        for (position, i) in sorted.enumerated() { order[i] = Int32(position) }

        var nodes = [Node()]
        var edges: [[UInt8]: Int32] = [:]
        var ends: [Int32: [Candidate]] = [:]
        var rests: [Int32: [Candidate]] = [:]
        for (i, r) in routes.enumerated() {
            var node: Int32 = 0
            let c = Candidate(methods: r.candidate.methods, index: r.candidate.index, order: order[i])
            for segment in r.template.segments {
                switch segment {
                case .literal(let text):
                    let key = Array(text.utf8) + Self.bytes(of: node)
                    if let child = edges[key] {
                        node = child
                    } else {
                        nodes.append(Node())
                        edges[key] = Int32(nodes.count - 1)
                        node = Int32(nodes.count - 1)
                    }
                case .variable:
                    if nodes[Int(node)].variable < 0 {
                        nodes.append(Node())
                        nodes[Int(node)].variable = Int32(nodes.count - 1)
                    }
                    node = nodes[Int(node)].variable
                case .rest:
                    rests[node, default: []].append(c)
                }
            }
            if !r.template.hasRest { ends[node, default: []].append(c) }
        }
        var candidates: [Candidate] = []
        func place(_ list: [Candidate]?) -> Range<Int32> {
            let start = Int32(candidates.count)
            candidates += (list ?? []).sorted { $0.order < $1.order }
            return start..<Int32(candidates.count)
        }
        for n in nodes.indices {
            nodes[n].end = place(ends[Int32(n)])
            nodes[n].rest = place(rests[Int32(n)])
        }
        self.nodes = nodes
        self.candidates = candidates
        literals = ByteKeyTable(edges.map { (key: $0.key, hash: PrefixHash.of($0.key), value: $0.value) })
    }

    private static func bytes(of node: Int32) -> [UInt8] {
        let v = UInt32(bitPattern: node)
        return [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24)]
    }

    /// The index (`RouteConfig.index`) of the best template route for `path` (normalized).
    func first(path p: Span<UInt8>, method: HTTPMethod) -> Int32? {
        var best = Candidate(methods: .all, index: -1, order: Int32.max)
        search(p, node: 0, at: 0, method, &best)
        return best.index >= 0 ? best.index : nil
    }

    /// Walks on from `node`, whose segments end at `pos`: the "/" before the next segment, or
    /// the path's end.
    private func search(_ p: Span<UInt8>, node: Int32, at pos: Int, _ method: HTTPMethod, _ best: inout Candidate) {
        let n = p.count
        guard pos < n else {
            consider(nodes[Int(node)].end, method, &best)
            return
        }
        guard p[pos] == UInt8(ascii: "/") else { return }
        // The trailing "/" of a path that is otherwise the template's (as `path:` allows it).
        if pos == n - 1 {
            consider(nodes[Int(node)].end, method, &best)
            return
        }
        // `{name*}`: one or more characters follow the "/".
        consider(nodes[Int(node)].rest, method, &best)
        let start = pos + 1
        var end = start
        var hash = PrefixHash.empty
        while end < n && p[end] != UInt8(ascii: "/") {
            hash = PrefixHash.adding(p[end], to: hash)
            end += 1
        }
        let variable = nodes[Int(node)].variable
        if variable >= 0 { search(p, node: variable, at: end, method, &best) }
        let length = end - start
        guard literals.mayHold(length: length + 4) else { return }
        let v = UInt32(bitPattern: node)
        let b0 = UInt8(v & 0xff)
        let b1 = UInt8(v >> 8 & 0xff)
        let b2 = UInt8(v >> 16 & 0xff)
        let b3 = UInt8(v >> 24)
        hash = PrefixHash.adding(
            b3, to: PrefixHash.adding(b2, to: PrefixHash.adding(b1, to: PrefixHash.adding(b0, to: hash))))
        let segment = p.extracting(start..<end)
        let child = literals.find(hash: hash) { key in
            key.count == length + 4 && key[length] == b0 && key[length + 1] == b1 && key[length + 2] == b2
                && key[length + 3] == b3 && key.extracting(first: length).elementsEqual(segment)
        }
        if let child { search(p, node: child, at: end, method, &best) }
    }

    /// The first candidate of `range` that allows `method` is that node's best; it replaces
    /// `best` if it comes earlier in the precedence order.
    @inline(__always)
    private func consider(_ range: Range<Int32>, _ method: HTTPMethod, _ best: inout Candidate) {
        let c = candidates.span
        for i in range where c[Int(i)].methods.contains(method) {
            if c[Int(i)].order < best.order { best = c[Int(i)] }
            return
        }
    }
}
