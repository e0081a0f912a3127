import Reactor
import TestSupport
import Testing

@testable import Gateway

/// The compiled `Router` against `LinearRouter`, its oracle, on random route tables: hosts
/// exact and wildcard (nested suffixes), exact and prefix paths that overlap, with and
/// without a trailing "/", method lists (empty ones too), and ties, drawn from small pools
/// so that rules collide often. Seeded: a failure names its seed and repeats.
@Suite("Router: the compiled table picks what the linear walk picks")
struct RouterPropertyTests {
    static let segments = ["a", "b", "ab", "api", "v1", "x", "a.b", "%2A"]
    static let hosts = ["a.com", "b.a.com", "x.b.a.com", "c.com", "a-b.com", "com"]
    static let hostRules = ["a.com", "b.a.com", "c.com", "*.a.com", "*.b.a.com", "*.com", "*.x.b.a.com"]
    static let requestHosts = hosts + ["y.x.b.a.com", "a.co", "", "[::1]", "aa.com", "b.a.comx"]

    static func path(_ g: inout SeededRandom, maxDepth: Int = 3) -> String {
        let depth = Int.random(in: 0...maxDepth, using: &g)
        var p = ""
        for _ in 0..<depth { p += "/" + segments.randomElement(using: &g)! }
        if p.isEmpty || Bool.random(using: &g) && Int.random(in: 0..<3, using: &g) == 0 { p += "/" }
        return p
    }

    static func table(_ g: inout SeededRandom, count: Int) -> [RouteConfig] {
        (0..<count).map { i in
            let host: HostPattern? =
                Int.random(in: 0..<3, using: &g) == 0 ? nil : HostPattern(hostRules.randomElement(using: &g)!)
            let p = path(&g)
            let pattern: PathPattern = Bool.random(using: &g) ? .prefix(p) : .exact(p)
            var methods: Set<HTTPMethod>?
            switch Int.random(in: 0..<4, using: &g) {
            case 0: methods = []
            case 1: methods = Set(HTTPMethod.allCases.filter { _ in Int.random(in: 0..<3, using: &g) == 0 })
            default: methods = nil
            }
            return RouteConfig(
                index: i, name: "r\(i)", match: RouteMatch(host: host, path: pattern, methods: methods),
                upstream: "u")
        }
    }

    /// A request target: a path, sometimes with dot-segments that `PathNormalizer` resolves.
    static func target(_ g: inout SeededRandom) -> String {
        var t = path(&g, maxDepth: 5)
        if Int.random(in: 0..<4, using: &g) == 0 {
            t += "/../" + segments.randomElement(using: &g)!
            if Bool.random(using: &g) { t = "/" + segments.randomElement(using: &g)! + t }
        }
        return t
    }

    /// Returns how many requests the oracle routed, escaped or found no route for, so each test
    /// can check that its tables exercise all three.
    @discardableResult
    func compare(seed: UInt64, routes count: Int, requests: Int) -> (routed: Int, escapes: Int, notFound: Int) {
        var seen = (routed: 0, escapes: 0, notFound: 0)
        var g = SeededRandom(state: seed)
        let routes = Self.table(&g, count: count)
        let compiled = Router(routes: routes)
        let oracle = LinearRouter(routes: routes)
        for _ in 0..<requests {
            let host = Self.requestHosts.randomElement(using: &g)!
            let method = HTTPMethod.allCases.randomElement(using: &g)!
            let target = Self.target(&g)
            guard case .success(let n) = PathNormalizer.normalize(target: target) else { continue }
            let got = compiled.decide(host: host, method: method, normalized: n)
            let want = oracle.decide(host: host, method: method, normalized: n)
            #expect(got == want, "seed \(seed): \(method) \(host) \(target) (\(n.path))")
            if got != want { return seen }
            switch want {
            case .route: seen.routed += 1
            case .escapesRoute: seen.escapes += 1
            case .notFound: seen.notFound += 1
            }
        }
        return seen
    }

    @Test("small tables, many collisions", arguments: 0..<8)
    func smallTables(batch: UInt64) {
        var total = (routed: 0, escapes: 0, notFound: 0)
        for seed in batch * 500..<(batch + 1) * 500 {
            let seen = compare(seed: seed, routes: Int(seed % 40) + 1, requests: 60)
            total = (total.routed + seen.routed, total.escapes + seen.escapes, total.notFound + seen.notFound)
        }
        // Not a tautology: the tables route a good share of requests, and refuse some both ways.
        #expect(total.routed > 10_000 && total.escapes > 2_000 && total.notFound > 5_000, "\(total)")
    }

    @Test("large tables", arguments: [10_001 as UInt64, 10_002, 10_003])
    func largeTables(seed: UInt64) {
        let seen = compare(seed: seed, routes: 3_000, requests: 3_000)
        #expect(seen.routed > 2_000, "\(seen)")
    }

    /// Deep paths: every prefix of a long path is a probe, and the longest one must win.
    @Test func longestOfManyPrefixes() {
        var routes: [RouteConfig] = []
        var p = ""
        for i in 0..<200 {
            p += "/s\(i)"
            routes.append(
                RouteConfig(
                    index: i, name: "r\(i)",
                    match: RouteMatch(host: nil, path: .prefix(i % 2 == 0 ? p : p + "/"), methods: nil),
                    upstream: "u"))
        }
        let compiled = Router(routes: routes)
        let oracle = LinearRouter(routes: routes)
        var q = ""
        for i in 0..<210 {
            q += "/s\(i)"
            for path in [q, q + "/", q + "x", q + "/y"] {
                #expect(
                    compiled.matchIndex(host: "h", method: .GET, path: path)
                        == oracle.matchIndex(host: "h", method: .GET, path: path), "\(path)")
            }
        }
    }
}
