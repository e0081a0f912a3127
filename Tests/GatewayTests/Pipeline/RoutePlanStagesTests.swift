import Testing

@testable import Gateway

/// Each route's chain is made once per config, from its settings: the stages it names, in
/// the order the request path needs them.
@Suite("Route plans: each route's stages, in order")
struct RoutePlanStagesTests {
    @Test func aPublicRouteGoesStraightToTheUpstream() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/public/x")
        #expect(
            h.chain == [
                "UpgradeStage", "PublicRouteStage", "GRPCDeadlineStage", "RequestBufferingStage", "UpstreamQueueStage",
                "ProxyStage"
            ])
        #expect(h.decisionChain == ["PublicRouteStage"])
    }

    @Test func aTokenRouteWithCORSPreflightsLetsThemPassFirst() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/api/x")
        #expect(
            h.chain == [
                "UpgradeStage", "CORSPreflightStage", "TokenStage", "GRPCDeadlineStage", "RequestBufferingStage",
                "UpstreamQueueStage", "ProxyStage"
            ])
    }

    @Test func anMCPRouteJudgesTheCallAfterTheToken() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "POST", "/mcp")
        #expect(h.chain.prefix(3) == ["UpgradeStage", "TokenStage", "MCPStage"])
        // A decision has no body to judge the call by: its chain refuses POSTs instead.
        #expect(h.decisionChain == ["TokenStage", "MCPDecisionStage"])
    }

    @Test func aLoginRouteHasTheSessionDecide() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/web/")
        #expect(h.chain[1] == "SessionStage")
    }

    @Test func aTokenExchangeRouteTradesTheTokenBeforeTheUpstream() throws {
        let yaml = TokenExchangeConfigTests.yaml(
            "name: api\nauth: bearer\nissuers: [one]\ntoken_exchange: { issuer: one, client: gw, endpoint: https://idp.one/token, audience: b }"
        )
        let h = try StageHarness(try testWorker(yaml), "GET", "/api")
        #expect(
            h.chain == [
                "UpgradeStage", "TokenStage", "TokenExchangeStage", "GRPCDeadlineStage", "RequestBufferingStage",
                "UpstreamQueueStage", "ProxyStage"
            ])
        #expect(h.decisionChain == ["TokenStage"], "a decision sends nothing upstream: no exchange")
    }
}
