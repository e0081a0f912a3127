import Reactor

/// Chooses a route for (host, method, normalized path). Routes are sorted once, most
/// specific first — host (exact, then longest wildcard, then any), then path (exact, then
/// longest prefix), then routes with a method list before those without — and the first
/// match wins; ties keep config order.
struct Router: Sendable {
    let routes: [RouteConfig]
    /// What matching reads of each route, in the same order: a small value per route, so a
    /// request does not copy whole routes while it looks.
    private let matchers: [Matcher]

    private struct Matcher: Sendable {
        let match: RouteMatch
        let index: Int
    }

    init(routes: [RouteConfig]) {
        self.routes = routes.sorted { a, b in
            let ka = Router.rank(a)
            let kb = Router.rank(b)
            if ka != kb { return ka.lexicographicallyPrecedes(kb) == false }
            return a.index < b.index
        }
        matchers = self.routes.map { Matcher(match: $0.match, index: $0.index) }
    }

    private static func rank(_ r: RouteConfig) -> [Int] {
        [r.match.host?.specificity ?? 0, r.match.path.specificity, r.match.methods == nil ? 0 : 1]
    }

    func match(host: String, method: HTTPMethod, path: String) -> RouteConfig? {
        matchIndex(host: host, method: method, path: path).flatMap { i in routes.first { $0.index == i } }
    }

    /// The index (`RouteConfig.index`) of the first route that matches.
    func matchIndex(host: String, method: HTTPMethod, path: String) -> Int? {
        matchers.withUnsafeBufferPointer { all in
            for i in all.indices {
                if let h = all[i].match.host, !h.matches(host) { continue }
                if let m = all[i].match.methods, !m.contains(method) { continue }
                if all[i].match.path.matches(path) { return all[i].index }
            }
            return nil
        }
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
        return .route(route)
    }
}
