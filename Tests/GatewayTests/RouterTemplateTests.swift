import Reactor
import Testing

@testable import Gateway

/// Where templates stand in the router's precedence, rule by rule: exact, then template,
/// then longest prefix; among templates, more literal segments, then no `{name*}`, then fewer
/// variables, then a method list, then config order. Host rules come first, as for the others.
@Suite("Router: path templates between exact paths and prefixes")
struct RouterTemplateTests {
    static func route(_ i: Int, _ path: PathPattern, host: String? = nil, methods: [HTTPMethod]? = nil)
        -> RouteConfig
    {
        RouteConfig(
            index: i, name: "r\(i)",
            match: RouteMatch(host: host.flatMap(HostPattern.init), path: path, methods: methods.map(Set.init)),
            upstream: "u")
    }

    static func t(_ text: String) -> PathPattern { .template(try! PathTemplate(parsing: text)) }

    /// Checks `Router` and the linear oracle agree on every case, and the expected index.
    func expectRoutes(_ routes: [RouteConfig], _ cases: [(String, Int?)], method: HTTPMethod = .GET, host: String = "h")
    {
        let r = Router(routes: routes)
        let oracle = LinearRouter(routes: routes)
        for (path, expected) in cases {
            #expect(r.matchIndex(host: host, method: method, path: path) == expected, "\(method) \(host)\(path)")
            #expect(oracle.matchIndex(host: host, method: method, path: path) == expected, "oracle: \(path)")
        }
    }

    @Test func exactThenTemplateThenPrefix() {
        let routes = [
            Self.route(0, .prefix("/orders/")), Self.route(1, Self.t("/orders/{id}")),
            Self.route(2, .exact("/orders/export")), Self.route(3, .prefix("/orders/export/"))
        ]
        expectRoutes(
            routes,
            [
                ("/orders/42", 1), ("/orders/42/", 1), ("/orders/export", 2), ("/orders/export/", 2),
                ("/orders/export/x", 3),
                ("/orders/", 0), ("/orders/a/b", 0), ("/orders", nil), ("/other", nil)
            ])
    }

    @Test func anUnmatchedTemplateFallsToTheNextRuleOr404() {
        let routes = [Self.route(0, Self.t("/orders/{id}")), Self.route(1, .prefix("/orders/a/"))]
        expectRoutes(routes, [("/orders/", nil), ("/orders/a/b", 1), ("/orders/b/c", nil), ("/orders/a", 0)])
    }

    @Test func moreLiteralSegmentsFirst() {
        let routes = [
            Self.route(0, Self.t("/{a}/{b}/{c}")), Self.route(1, Self.t("/orders/{id}/items")),
            Self.route(2, Self.t("/{a}/{b}/items")), Self.route(3, Self.t("/orders/{id}/{x*}"))
        ]
        expectRoutes(
            routes, [("/orders/1/items", 1), ("/users/1/items", 2), ("/users/1/x", 0), ("/orders/1/x", 3)])
    }

    @Test func noRestBeforeRestThenFewerVariables() {
        let routes = [
            Self.route(0, Self.t("/files/{p*}")), Self.route(1, Self.t("/files/{name}")),
            Self.route(2, Self.t("/files/{dir}/{p*}"))
        ]
        // /files/{dir}/{p*} has as many literals as /files/{p*} and more variables: it loses to it.
        expectRoutes(routes, [("/files/x", 1), ("/files/x/", 1), ("/files/x/y", 0), ("/files/x/y/z", 0)])
    }

    @Test func aMethodListFirstThenConfigOrder() {
        let routes = [
            Self.route(0, Self.t("/a/{x}")), Self.route(1, Self.t("/{y}/b")),
            Self.route(2, Self.t("/{y}/b"), methods: [.POST])
        ]
        expectRoutes(routes, [("/a/b", 0), ("/c/b", 1), ("/a/c", 0)])
        expectRoutes(routes, [("/a/b", 2), ("/c/b", 2), ("/a/c", 0)], method: .POST)
        // The same two templates the other way round: config order decides.
        let swapped = [Self.route(0, Self.t("/{y}/b")), Self.route(1, Self.t("/a/{x}"))]
        expectRoutes(swapped, [("/a/b", 0)])
    }

    @Test func anExactRouteForOtherMethodsLetsTheTemplateServe() {
        let routes = [Self.route(0, .exact("/orders/new"), methods: [.POST]), Self.route(1, Self.t("/orders/{id}"))]
        expectRoutes(routes, [("/orders/new", 1)])
        expectRoutes(routes, [("/orders/new", 0)], method: .POST)
        // And a template for other methods lets the prefix serve.
        let more = [Self.route(0, Self.t("/o/{id}"), methods: [.DELETE]), Self.route(1, .prefix("/o/"))]
        expectRoutes(more, [("/o/1", 1)])
        expectRoutes(more, [("/o/1", 0)], method: .DELETE)
    }

    @Test func hostRulesComeFirst() {
        let routes = [
            Self.route(0, Self.t("/orders/{id}")), Self.route(1, .prefix("/"), host: "api.example"),
            Self.route(2, Self.t("/{a}/{b}"), host: "*.example"), Self.route(3, .prefix("/x/"), host: "*.example")
        ]
        expectRoutes(routes, [("/orders/1", 1)], host: "api.example")
        expectRoutes(routes, [("/orders/1", 2), ("/x/1", 2), ("/x/1/2", 3), ("/y", nil)], host: "w.example")
        expectRoutes(routes, [("/orders/1", 0), ("/x/1", nil)], host: "other")
    }

    @Test func manyTemplatesShareATrie() {
        var routes: [RouteConfig] = []
        for i in 0..<500 { routes.append(Self.route(i, Self.t("/svc\(i)/{id}/items/{item}"))) }
        routes.append(Self.route(500, Self.t("/{s}/{id}/{x*}")))
        expectRoutes(
            routes,
            [
                ("/svc7/1/items/2", 7), ("/svc499/a/items/b/", 499), ("/svc7/1/items", 500), ("/svc500/1/items/2", 500),
                ("/svc7/1", nil)
            ])
    }

    /// The router's decision for a target as the request pipeline normalizes it (nil: refused
    /// by the normalizer).
    static func decider(_ r: Router) -> (String) -> Router.Decision? {
        { target in
            guard case .success(let n) = PathNormalizer.normalize(target: target) else { return nil }
            return r.decide(host: "h", method: .GET, normalized: n)
        }
    }

    /// `..` is judged as for other routes: it may move within the template's route, not out.
    @Test func dotSegmentsStayInTheirRoute() {
        let r = Router(routes: [Self.route(0, Self.t("/orders/{id}")), Self.route(1, .prefix("/admin/"))])
        let decide = Self.decider(r)
        #expect(decide("/orders/1/../2") == .route(0))
        #expect(decide("/orders/1/../../admin/x") == .escapesRoute)
        #expect(decide("/admin/../orders/1") == .escapesRoute)
    }

    /// `/orders/..` is the template route's path as spelled (`id` = `..`): the `..` that
    /// takes it to `/`, the public route, leaves the route it was in, encoded or not.
    @Test func aDotDotInATemplateVariableLeavesItsRoute() {
        let r = Router(routes: [
            Self.route(0, Self.t("/orders/{id}")), Self.route(1, .prefix("/admin/")), Self.route(2, .prefix("/"))
        ])
        let decide = Self.decider(r)
        #expect(decide("/orders/%2e%2e") == .escapesRoute)
        #expect(decide("/orders/..") == .escapesRoute)
        #expect(decide("/orders/%2E%2E/") == .escapesRoute)
        #expect(decide("/orders/1/../2") == .route(0))
        #expect(decide("/other/../x") == .route(2))
    }

    /// `/orders/%2e/x` is `/orders/{id}/x`'s path as written (`id` = `.`); resolved, it is
    /// `/orders/x`, another route's. A `.` that leaves a template's route is refused too.
    @Test func aDotInATemplateVariableLeavesItsRoute() {
        let r = Router(routes: [
            Self.route(0, Self.t("/orders/{id}/x")), Self.route(1, .prefix("/orders/")), Self.route(2, .prefix("/"))
        ])
        let decide = Self.decider(r)
        #expect(decide("/orders/%2e/x") == .escapesRoute)
        #expect(decide("/orders/./x") == .escapesRoute)
        #expect(decide("/orders/7/./x") == .route(0))
        #expect(decide("/static/./a.css") == .route(2))
    }
}
