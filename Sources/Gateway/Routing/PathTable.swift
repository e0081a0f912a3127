import Reactor

/// A route's `methods:` as one bit per method, so checking one costs an AND.
struct MethodSet: Sendable, Equatable {
    let bits: UInt8

    static let all = MethodSet(bits: UInt8.max)

    init(bits: UInt8) { self.bits = bits }

    init(_ methods: Set<HTTPMethod>) {
        bits = methods.reduce(0) { $0 | MethodSet.bit($1) }
    }

    @inline(__always)
    func contains(_ method: HTTPMethod) -> Bool { bits & MethodSet.bit(method) != 0 }

    @inline(__always)
    static func bit(_ method: HTTPMethod) -> UInt8 {
        switch method {
        case .GET: return 1
        case .POST: return 2
        case .HEAD: return 4
        case .PUT: return 8
        case .DELETE: return 16
        case .OPTIONS: return 32
        case .PATCH: return 64
        }
    }
}

/// The path rules of the routes that share one host rule, found in one pass over the path
/// (and, when the host rule has templates, one walk of their trie: `TemplateTable`).
///
/// Which rules can match a path is known from its slashes alone: an exact rule is the path
/// itself or the path less its trailing "/"; a prefix rule ends just before a "/", just after
/// one, or at the path's end (`PathPattern.matches`). So the scan hashes the path once and
/// probes the table only at those points, never the rules the path cannot match: the cost
/// follows the path's length, not the number of routes.
///
/// Paths are normalized (`PathNormalizer`: ASCII only), as are the rules (the config
/// parser refuses others), so bytes compare as the rules' strings do.
struct PathTable: Sendable {
    /// One rule's routes, most specific first: those with a method list before those
    /// without, then config order.
    struct Candidate: Sendable {
        let methods: MethodSet
        let index: Int32
    }

    /// The routes of one path string, as exact rule and as prefix rule: ranges of `candidates`.
    private struct Rules: Sendable {
        let exact: Range<Int32>
        let prefix: Range<Int32>
    }

    private let table: ByteKeyTable<Rules>
    private let candidates: [Candidate]
    private let hasExact: Bool
    /// nil when no route of this host rule has a template: a lookup then costs the exact and
    /// prefix probes and one test of this field.
    private let templates: TemplateTable?

    /// `routes`: every route of this host rule.
    init(_ routes: [(pattern: PathPattern, candidate: Candidate, hasMethods: Bool)]) {
        var exact: [String: [(Candidate, Bool)]] = [:]
        var prefix: [String: [(Candidate, Bool)]] = [:]
        var templates: [(template: PathTemplate, candidate: Candidate, hasMethods: Bool)] = []
        for r in routes {
            switch r.pattern {
            case .exact(let p): exact[p, default: []].append((r.candidate, r.hasMethods))
            case .prefix(let p): prefix[p, default: []].append((r.candidate, r.hasMethods))
            case .template(let t): templates.append((t, r.candidate, r.hasMethods))
            }
        }
        self.templates = templates.isEmpty ? nil : TemplateTable(templates)
        // Routes with a method list first, then config order (Router's precedence).
        func ordered(_ list: [(Candidate, Bool)]) -> [Candidate] {
            list.sorted { a, b in a.1 != b.1 ? a.1 : a.0.index < b.0.index }.map(\.0)
        }
        var candidates: [Candidate] = []
        var items: [(key: [UInt8], hash: UInt64, value: Rules)] = []
        for key in Set(exact.keys).union(prefix.keys).sorted() {
            let e = ordered(exact[key] ?? [])
            let p = ordered(prefix[key] ?? [])
            let start = Int32(candidates.count)
            candidates += e + p
            let rules = Rules(
                exact: start..<start + Int32(e.count), prefix: start + Int32(e.count)..<Int32(candidates.count))
            let bytes = Array(key.utf8)
            items.append((bytes, PrefixHash.of(bytes), rules))
        }
        table = ByteKeyTable(items)
        self.candidates = candidates
        hasExact = !exact.isEmpty
    }

    /// The index (`RouteConfig.index`) of the most specific route for `path`: an exact rule
    /// (the longer first), then a template (`TemplateTable`), then a prefix rule, a longer
    /// prefix before a shorter one.
    func first(path p: Span<UInt8>, method: HTTPMethod) -> Int32? {
        let n = p.count
        var hash = PrefixHash.empty
        var withoutLastByte = PrefixHash.empty
        // Prefix rules come up shortest first, so each hit replaces the one before.
        var prefixHit: Int32 = -1
        for i in 0..<n {
            let c = p[i]
            if c == UInt8(ascii: "/") && i > 0 { probePrefix(length: i, hash: hash, p, method, &prefixHit) }
            hash = PrefixHash.adding(c, to: hash)
            if c == UInt8(ascii: "/") && i + 1 < n { probePrefix(length: i + 1, hash: hash, p, method, &prefixHit) }
            if i == n - 2 { withoutLastByte = hash }
        }
        if n > 0 { probePrefix(length: n, hash: hash, p, method, &prefixHit) }
        if hasExact {
            // An exact rule also takes the path with a trailing "/" (`PathPattern.matches`).
            if let hit = exactHit(length: n, hash: hash, p, method) { return hit }
            if n > 1 && p[n - 1] == UInt8(ascii: "/"),
                let hit = exactHit(length: n - 1, hash: withoutLastByte, p, method)
            {
                return hit
            }
        }
        if let templates, let hit = templates.first(path: p, method: method) { return hit }
        return prefixHit >= 0 ? prefixHit : nil
    }

    @inline(__always)
    private func rules(length: Int, hash: UInt64, _ p: Span<UInt8>) -> Rules? {
        guard table.mayHold(length: length) else { return nil }
        let prefix = p.extracting(first: length)
        return table.find(hash: hash) { key in key.elementsEqual(prefix) }
    }

    private func probePrefix(
        length: Int, hash: UInt64, _ p: Span<UInt8>, _ method: HTTPMethod, _ hit: inout Int32
    ) {
        guard let r = rules(length: length, hash: hash, p), let i = firstAllowing(method, in: r.prefix) else { return }
        hit = i
    }

    private func exactHit(length: Int, hash: UInt64, _ p: Span<UInt8>, _ method: HTTPMethod) -> Int32? {
        guard let r = rules(length: length, hash: hash, p) else { return nil }
        return firstAllowing(method, in: r.exact)
    }

    private func firstAllowing(_ method: HTTPMethod, in range: Range<Int32>) -> Int32? {
        let c = candidates.span
        for i in range where c[Int(i)].methods.contains(method) { return c[Int(i)].index }
        return nil
    }
}
