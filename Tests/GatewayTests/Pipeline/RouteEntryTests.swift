import Testing

@testable import Gateway
@testable import Reactor

/// The second stage: a request is placed (its path, its route or the gateway's endpoint) once,
/// and what cannot be routed is answered here, before any route's chain.
@Suite("RouteEntry: where a request goes")
struct RouteEntryTests {
    func placed(_ w: Worker, _ target: String) -> (RequestContext, InMemoryTransport) {
        let (ex, t) = InMemoryTransport.exchange("GET", target, fields: [("Host", "a")])
        w.metrics.inflight += 1
        ex.responder.observer = w
        let ctx = TrustEntry(services: w.services).context(ex, trusted: false, host: "a", start: 0)
        RouteEntry(services: w.services).run(ex, ctx, trusted: false, host: ("a", 1))
        return (ctx, t)
    }

    @Test func anUnroutedRequestIs404AndPlacedAtItsTarget() throws {
        let (ctx, t) = placed(try testWorker(PipelineConfigs.yaml), "/nowhere?x=1")
        #expect(t.status == 404)
        #expect(ctx.path == "/nowhere?x=1" && ctx.route == "-" && ctx.routeID == -1)
    }

    @Test func aLoginEndpointIsPlacedAsLogin() throws {
        let (ctx, _) = placed(try testWorker(PipelineConfigs.yaml), "/oauth2/start?client=nobody")
        #expect(ctx.route == "login" && ctx.path == "/oauth2/start")
    }

    @Test func aRoutedRequestIsPlacedOnItsRouteAndRunsItsChain() throws {
        let (ctx, t) = placed(try testWorker(PipelineConfigs.yaml), "/api/orders")
        #expect(ctx.route == "api" && ctx.routeID >= 0 && ctx.path == "/api/orders")
        // Its chain ran to the token stage, which refuses a request without a token.
        #expect(t.status == 401)
    }
}
