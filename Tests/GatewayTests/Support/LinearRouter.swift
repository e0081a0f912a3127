import Reactor

@testable import Gateway

/// The router as it was first written, kept as the test oracle for the compiled `Router`:
/// every route sorted once by specificity (host, then path, then a method list), config
/// order on a tie, and the first match wins. Slow (it walks every route) and obviously
/// right, which is what an oracle should be.
struct LinearRouter {
    private let sorted: [RouteConfig]

    init(routes: [RouteConfig]) {
        sorted = routes.sorted { a, b in
            let ka = LinearRouter.rank(a)
            let kb = LinearRouter.rank(b)
            if ka != kb { return ka.lexicographicallyPrecedes(kb) == false }
            return a.index < b.index
        }
    }

    private static func rank(_ r: RouteConfig) -> [Int] {
        [r.match.host?.specificity ?? 0] + r.match.path.specificity + [r.match.methods == nil ? 0 : 1]
    }

    func matchIndex(host: String, method: HTTPMethod, path: String) -> Int? {
        for r in sorted {
            if let h = r.match.host, !h.matches(host) { continue }
            if let m = r.match.methods, !m.contains(method) { continue }
            if r.match.path.matches(path) { return r.index }
        }
        return nil
    }

    func decide(host: String, method: HTTPMethod, normalized: PathNormalizer.Normalized) -> Router.Decision {
        guard let route = matchIndex(host: host, method: method, path: normalized.path) else {
            return normalized.dotDotOrigins.isEmpty ? .notFound : .escapesRoute
        }
        for origin in normalized.dotDotOrigins where matchIndex(host: host, method: method, path: origin) != route {
            return .escapesRoute
        }
        if let spelled = normalized.spelled, let written = matchIndex(host: host, method: method, path: spelled),
            written != route, case .template = sorted.first(where: { $0.index == written })?.match.path
        {
            return .escapesRoute
        }
        return .route(route)
    }
}
