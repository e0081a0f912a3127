import Reactor
import TestSupport
import Testing

@testable import Gateway

/// The compiled `Router` against `LinearRouter` on random tables that mix templates with exact
/// paths and prefixes (the same pools as `RouterPropertyTests`, so rules collide often): one
/// and several variables, `{name*}`, shared literals, method lists, hosts. And what a template
/// captures against a second, independent reading of the rules (`referenceCaptures`), so the
/// oracle's own matching is checked too. Seeded: a failure names its seed and repeats.
@Suite("Router: templates pick what the linear walk picks")
struct RouterTemplatePropertyTests {
    static func template(_ g: inout SeededRandom) -> PathTemplate {
        let depth = Int.random(in: 1...3, using: &g)
        var text = ""
        var variables = 0
        for k in 0..<depth {
            let last = k == depth - 1
            if last && Int.random(in: 0..<4, using: &g) == 0 {
                text += "/{r\(k)*}"
                variables += 1
            } else if Bool.random(using: &g) || (last && variables == 0) {
                text += "/{v\(k)}"
                variables += 1
            } else {
                text += "/" + RouterPropertyTests.segments.randomElement(using: &g)!
            }
        }
        return try! PathTemplate(parsing: text)
    }

    static func table(_ g: inout SeededRandom, count: Int) -> [RouteConfig] {
        (0..<count).map { i in
            let host: HostPattern? =
                Int.random(in: 0..<3, using: &g) == 0
                ? nil : HostPattern(RouterPropertyTests.hostRules.randomElement(using: &g)!)
            let pattern: PathPattern
            switch Int.random(in: 0..<4, using: &g) {
            case 0: pattern = .exact(RouterPropertyTests.path(&g))
            case 1: pattern = .prefix(RouterPropertyTests.path(&g))
            default: pattern = .template(template(&g))
            }
            var methods: Set<HTTPMethod>?
            switch Int.random(in: 0..<4, using: &g) {
            case 0: methods = Set(HTTPMethod.allCases.filter { _ in Int.random(in: 0..<3, using: &g) == 0 })
            default: methods = nil
            }
            return RouteConfig(
                index: i, name: "r\(i)", match: RouteMatch(host: host, path: pattern, methods: methods),
                upstream: "u")
        }
    }

    /// The rules read a second way, on strings: split both at "/", drop one trailing empty
    /// piece from the path unless the template ends in `{name*}`, then compare piece by piece.
    static func referenceCaptures(_ t: PathTemplate, _ path: String) -> [String]? {
        guard path.hasPrefix("/") else { return nil }
        var pieces = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var values: [String] = []
        for (k, segment) in t.segments.enumerated() {
            if case .rest = segment {
                let rest = pieces.dropFirst(k).joined(separator: "/")
                return k < pieces.count && !rest.isEmpty ? values + [rest] : nil
            }
            if k == t.segments.count - 1, pieces.count == k + 2, pieces.last == "" { pieces.removeLast() }
            guard k < pieces.count, !pieces[k].isEmpty else { return nil }
            switch segment {
            case .literal(let l): if pieces[k] != l { return nil }
            case .variable: values.append(pieces[k])
            case .rest: return nil
            }
        }
        return pieces.count == t.segments.count ? values : nil
    }

    /// How many requests went to a template route, and how many the oracle routed at all.
    @discardableResult
    func compare(seed: UInt64, routes count: Int, requests: Int) -> (template: Int, routed: Int, captured: Int) {
        var seen = (template: 0, routed: 0, captured: 0)
        var g = SeededRandom(state: seed)
        let routes = Self.table(&g, count: count)
        let compiled = Router(routes: routes)
        let oracle = LinearRouter(routes: routes)
        for _ in 0..<requests {
            let host = RouterPropertyTests.requestHosts.randomElement(using: &g)!
            let method = HTTPMethod.allCases.randomElement(using: &g)!
            let target = RouterPropertyTests.target(&g)
            guard case .success(let n) = PathNormalizer.normalize(target: target) else { continue }
            let got = compiled.decide(host: host, method: method, normalized: n)
            let want = oracle.decide(host: host, method: method, normalized: n)
            #expect(got == want, "seed \(seed): \(method) \(host) \(target) (\(n.path))")
            if got != want { return seen }
            guard case .route(let i) = want else { continue }
            seen.routed += 1
            if routes[i].match.path.template != nil { seen.template += 1 }
            // Every template of the table against this path: both readings agree.
            for r in routes {
                guard let t = r.match.path.template else { continue }
                let values = t.parameters(in: n.path)?.list.map(\.value)
                #expect(values == Self.referenceCaptures(t, n.path), "seed \(seed): \(t) on \(n.path)")
                if values != nil { seen.captured += 1 }
            }
        }
        return seen
    }

    @Test("small tables, many collisions", arguments: 0..<8)
    func smallTables(batch: UInt64) {
        var total = (template: 0, routed: 0, captured: 0)
        for seed in batch * 400..<(batch + 1) * 400 {
            let seen = compare(seed: 50_000 + seed, routes: Int(seed % 30) + 1, requests: 60)
            total = (total.template + seen.template, total.routed + seen.routed, total.captured + seen.captured)
        }
        // Not a tautology: templates win a good share of the routed requests, and lose others.
        #expect(total.template > 1_000 && total.routed > total.template + 1_000 && total.captured > 2_000, "\(total)")
    }

    @Test("large tables", arguments: [20_001 as UInt64, 20_002])
    func largeTables(seed: UInt64) {
        let seen = compare(seed: seed, routes: 2_000, requests: 1_000)
        #expect(seen.template > 100, "\(seen)")
    }

    /// The reference reading itself, on the cases the rules spell out.
    @Test func referenceCapturesFollowTheRules() throws {
        let cases: [(String, String, [String]?)] = [
            ("/o/{id}", "/o/1", ["1"]), ("/o/{id}", "/o/1/", ["1"]), ("/o/{id}", "/o/", nil),
            ("/o/{id}", "/o/1/2", nil),
            ("/f/{p*}", "/f/a/b/", ["a/b/"]), ("/f/{p*}", "/f/", nil), ("/f/{p*}", "/f", nil)
        ]
        for (text, path, expected) in cases {
            #expect(Self.referenceCaptures(try PathTemplate(parsing: text), path) == expected, "\(text) \(path)")
        }
    }
}
