import Reactor

/// Chooses a route for (host, method, normalized path), most specific first:
/// - host: exact, then the longest `*.` wildcard, then routes with no host;
/// - then path, within the routes of that host rule: exact, then a template, then the
///   longest prefix; among templates, more literal segments first, then one without
///   `{name*}`, then fewer variables (`PathTemplate.rank`);
/// - then routes with a method list before those without;
/// - ties keep config order.
///
/// Compiled once per config (at start and on each reload), then shared by every worker
/// unchanged. A lookup reads only the candidates for the request's host and path: one hash
/// lookup for an exact host, one probe per label for wildcards, and one pass over the path
/// (`PathTable`, with a walk of a segment trie where the host rule has templates:
/// `TemplateTable`), however many routes the config has.
final class Router: Sendable {
    /// Exact host → its routes' table in `tables`.
    private let exactHosts: [String: Int32]
    /// Wildcard suffix (".example.com") → its table, keyed by the hash of the suffix read
    /// backwards, so a backward scan of the host probes every suffix in one pass.
    private let wildcards: ByteKeyTable<Int32>
    private let tables: [PathTable]
    /// Routes with no `host:`.
    private let anyHost: PathTable?
    /// The indexes of `path_template` routes, whose variables a `..` may sit in.
    private let templateRoutes: Set<Int>

    init(routes: [RouteConfig]) {
        templateRoutes = Set(routes.filter { if case .template = $0.match.path { true } else { false } }.map(\.index))
        var byHost: [HostPattern?: [(pattern: PathPattern, candidate: PathTable.Candidate, hasMethods: Bool)]] = [:]
        for r in routes {
            let candidate = PathTable.Candidate(
                methods: r.match.methods.map(MethodSet.init) ?? .all, index: Int32(r.index))
            byHost[r.match.host, default: []].append((r.match.path, candidate, r.match.methods != nil))
        }
        var exactHosts: [String: Int32] = [:]
        var wildcards: [(key: [UInt8], hash: UInt64, value: Int32)] = []
        var tables: [PathTable] = []
        for (host, list) in byHost {
            guard let host else { continue }
            let n = Int32(tables.count)
            tables.append(PathTable(list))
            switch host {
            case .exact(let name): exactHosts[name] = n
            case .wildcard(let suffix):
                let key = Array(suffix.utf8)
                wildcards.append((key, PrefixHash.of(key.reversed()), n))
            }
        }
        self.exactHosts = exactHosts
        self.wildcards = ByteKeyTable(wildcards)
        self.tables = tables
        anyHost = byHost[nil].map(PathTable.init)
    }

    /// The index (`RouteConfig.index`) of the most specific route that matches. `host` is
    /// normalized (`HostNormalizer`), `path` too (`PathNormalizer`).
    func matchIndex(host: String, method: HTTPMethod, path: String) -> Int? {
        let p = path.utf8.span
        if !exactHosts.isEmpty, let t = exactHosts[host], let hit = tables[Int(t)].first(path: p, method: method) {
            return Int(hit)
        }
        if !wildcards.isEmpty, let hit = wildcardHit(host: host, path: p, method: method) { return Int(hit) }
        return anyHost?.first(path: p, method: method).map(Int.init)
    }

    /// The wildcard rules that match `host` are its suffixes that start at a "." after the
    /// first byte (`HostPattern.matches`). Read backwards, shorter suffixes come first; their
    /// tables are then tried longest suffix first, and the first with a route wins, so the
    /// path is scanned once per matching rule at most (most hosts match one or none).
    private func wildcardHit(host: String, path: Span<UInt8>, method: HTTPMethod) -> Int32? {
        var matching: [Int32] = []
        let h = host.utf8.span
        var hash = PrefixHash.empty
        var i = h.count - 1
        while i > 0 {
            hash = PrefixHash.adding(h[i], to: hash)
            if h[i] == UInt8(ascii: "."), wildcards.mayHold(length: h.count - i) {
                let suffix = h.extracting(i...)
                if let t = wildcards.find(hash: hash, where: { $0.elementsEqual(suffix) }) { matching.append(t) }
            }
            i -= 1
        }
        for t in matching.reversed() {
            if let hit = tables[Int(t)].first(path: path, method: method) { return hit }
        }
        return nil
    }

    enum Decision: Equatable {
        case route(Int)
        case notFound
        /// A `..` in the request moved the path out of the route it was in.
        case escapesRoute
    }

    /// Routes a normalized request. A `..` that removed a segment is allowed only when the
    /// path, as it stood before that `..`, was served by the same route as the result: so
    /// `/static/css/../img/a.png` is fine, `/public/../admin` is refused (400), even though
    /// the gateway would route and check `/admin` correctly — a request that means one
    /// route and lands on another is an attack, not a typo.
    func decide(host: String, method: HTTPMethod, normalized: PathNormalizer.Normalized) -> Decision {
        guard let route = matchIndex(host: host, method: method, path: normalized.path) else {
            return normalized.dotDotOrigins.isEmpty ? .notFound : .escapesRoute
        }
        for origin in normalized.dotDotOrigins {
            if matchIndex(host: host, method: method, path: origin) != route { return .escapesRoute }
        }
        // As written, `/orders/%2e%2e` is `/orders/{id}`'s path (its `id` the `..`): a request
        // a template route would take before the `..` is resolved was in that route.
        if let spelled = normalized.spelled, let written = matchIndex(host: host, method: method, path: spelled),
            written != route, templateRoutes.contains(written)
        {
            return .escapesRoute
        }
        return .route(route)
    }
}
