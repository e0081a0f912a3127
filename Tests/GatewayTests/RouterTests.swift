import Reactor
import Testing

@testable import Gateway

@Suite("Router: most specific route wins; dot-segments may not change routes")
struct RouterTests {
    func route(_ i: Int, host: String? = nil, exact: String? = nil, prefix: String? = nil, methods: [HTTPMethod]? = nil)
        -> RouteConfig
    {
        RouteConfig(
            index: i, name: "r\(i)",
            match: RouteMatch(
                host: host.flatMap(HostPattern.init),
                path: exact.map(PathPattern.exact) ?? .prefix(prefix ?? "/"),
                methods: methods.map(Set.init)),
            upstream: "u")
    }

    var router: Router {
        Router(routes: [
            route(0, prefix: "/"),
            route(1, prefix: "/api"),
            route(2, prefix: "/api/orders/"),
            route(3, exact: "/api/orders/export"),
            route(4, prefix: "/api/orders/", methods: [.POST]),
            route(5, host: "*.example.com", prefix: "/"),
            route(6, host: "admin.example.com", prefix: "/"),
            route(7, host: "*.internal.example.com", prefix: "/"),
            route(8, prefix: "/public/"),
            route(9, prefix: "/admin")
        ])
    }

    @Test(
        "picks the most specific route",
        arguments: [
            ("h", HTTPMethod.GET, "/", 0), ("h", .GET, "/apiary", 0), ("h", .GET, "/api", 1), ("h", .GET, "/api/x", 1),
            ("h", .GET, "/api/orders/1", 2), ("h", .POST, "/api/orders/1", 4), ("h", .GET, "/api/orders/export", 3),
            ("h", .POST, "/api/orders/export", 3), ("h", .GET, "/api/orders/export/", 3), ("h", .GET, "/api/orders", 1),
            ("a.example.com", .GET, "/api", 5),
            ("admin.example.com", .GET, "/", 6), ("x.y.example.com", .GET, "/", 5), ("example.com", .GET, "/", 0),
            ("a.internal.example.com", .GET, "/", 7), ("notexample.com", .GET, "/", 0)
        ])
    func specificity(_ host: String, _ method: HTTPMethod, _ path: String, _ expected: Int) {
        #expect(router.matchIndex(host: host, method: method, path: path) == expected)
    }

    @Test func noMatchIs404() {
        let r = Router(routes: [route(0, prefix: "/api/", methods: [.GET])])
        #expect(r.matchIndex(host: "h", method: .GET, path: "/other") == nil)
        #expect(r.matchIndex(host: "h", method: .DELETE, path: "/api/x") == nil)
    }

    func decide(_ target: String) -> Router.Decision? {
        guard case .success(let n) = PathNormalizer.normalize(target: target) else { return nil }
        return router.decide(host: "h", method: .GET, normalized: n)
    }

    @Test func dotSegmentsThatLeaveTheirRouteAreRefused() {
        #expect(decide("/public/../admin") == .escapesRoute)
        #expect(decide("/public/%2e%2e/admin") == .escapesRoute)
        #expect(decide("/api/orders/../../admin/x") == .escapesRoute)
        #expect(decide("/public/css/../img/a.png") == .route(8))
        #expect(decide("/public/./x") == .route(8))
        #expect(decide("/x/../y") == .route(0))
    }

    @Test(
        "host patterns",
        arguments: [
            ("API.Example.COM", "*.example.com", true), ("example.com", "*.example.com", false),
            ("a.b.example.com", "*.example.com", true), ("aexample.com", "*.example.com", false),
            ("api.example.com", "api.example.com", true), ("api.example.com.evil", "api.example.com", false)
        ])
    func hosts(_ host: String, _ pattern: String, _ ok: Bool) {
        #expect(HostPattern(pattern)!.matches(HostNormalizer.normalize(host)!) == ok)
    }

    @Test func hostNormalization() {
        #expect(HostNormalizer.normalize("Example.COM:8080") == "example.com")
        #expect(HostNormalizer.normalize("example.com.") == "example.com")
        #expect(HostNormalizer.normalize("[::1]:80") == "[::1]")
        #expect(HostNormalizer.normalize("a b") == nil)
        #expect(HostNormalizer.normalize("evil.com/x") == nil)
        #expect(HostNormalizer.normalize("a:b") == nil)
        #expect(HostNormalizer.normalize("") == nil)
        #expect(HostNormalizer.normalize("exa_mple.com") == nil)
        #expect(HostNormalizer.normalize("[]") == nil)
        #expect(HostNormalizer.normalize("[Ａ]") == nil)
        // The byte-level pass keeps every rule of the label grammar and the port.
        for bad in [
            ".", "a..b", ".a", "a..", "a:", "a:65536", "a:+80", "a:123456", "a:8 0", "ünï.com", "[::1", "[::1]x",
            "\u{212A}.com"  // the Kelvin sign: Unicode lowercases it to "k", ASCII does not
        ] {
            #expect(HostNormalizer.normalize(bad) == nil, "\(bad)")
        }
        #expect(HostNormalizer.normalize("127.0.0.1:65535") == "127.0.0.1")
        #expect(HostNormalizer.normalize("A-1.Example.") == "a-1.example")
        #expect(HostNormalizer.normalize("[::FFFF:1.2.3.4]") == "[::ffff:1.2.3.4]")
        #expect(HostNormalizer.normalize("a.com:+80") == nil)
        #expect(HostNormalizer.normalize("a.com:99999") == nil)
        #expect(HostNormalizer.normalize("x.example.com..") == nil)
        #expect(HostNormalizer.normalize("..example.com") == nil)
        #expect(HostNormalizer.normalize("ex%41mple.com") == nil)
    }

    /// The memo answers as the normalizer does, whatever came before: a repeat, an invalid
    /// value remembered, a new value after it, a long (heap) string.
    @Test func hostMemoAnswersAsTheNormalizer() {
        let memo = HostMemo()
        let long = "Service-Name.Internal.Example.COM:8443"
        for value in [
            "Example.COM:8080", "Example.COM:8080", "a b", "a b", "example.com", "", "", long, long, "[::1]:80",
            "evil.com/x", "Example.COM:8080"
        ] {
            #expect(memo.normalize(value) == HostNormalizer.normalize(value), "\(value)")
        }
        #expect(memo.normalize(long) == "service-name.internal.example.com")
        #expect(memo.normalize("a b") == nil)
    }
}
