import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// The stages between admission and the upstream: an MCP call judged by its body, a token
/// traded for the upstream's.
@Suite("MCP and token exchange stages: what an admitted request must still pass")
struct AfterAdmissionStagesTests {
    static func admitted(_ h: StageHarness, token: String? = nil) {
        h.request.admission = Admission(
            identity: [], session: false, body: nil, claims: JSONObject(), presentedToken: token)
    }

    @Test func anMCPPostInAnotherMediaTypeIs415() throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "POST", "/mcp",
            fields: [("Host", "app.example"), ("Content-Type", "text/plain")],
            body: Array("{}".utf8))
        Self.admitted(h)
        #expect(h.run(try #require(h.stage(MCPStage.self))).answerStatus == 415)
        #expect(h.transport.closeAfter)
    }

    @Test func anMCPPostThatIsNoJSONRPCMessageIs400() throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "POST", "/mcp",
            fields: [("Host", "app.example"), ("Content-Type", "application/json")], body: Array("not json".utf8))
        Self.admitted(h)
        #expect(h.run(try #require(h.stage(MCPStage.self))).suspends)
        #expect(h.transport.status == 400)
    }

    @Test func anMCPCallThatPassesGoesOnWithItsBodyRead() throws {
        let call = #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "POST", "/mcp",
            fields: [("Host", "app.example"), ("Content-Type", "application/json")], body: Array(call.utf8))
        Self.admitted(h)
        // The chain goes on to the upstream stages (whose call waits here for a loop that
        // does not run); the admission is what the MCP stage handed on.
        #expect(h.run(try #require(h.stage(MCPStage.self))).suspends)
        #expect(h.transport.status == 0, "not refused")
        #expect(h.request.admission?.body is BufferedRequestBody, "the body read is what goes upstream")
    }

    @Test func anMCPGetPassesWithoutABody() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/mcp")
        Self.admitted(h)
        #expect(h.run(try #require(h.stage(MCPStage.self))).proceeds)
    }

    static let call = Array(#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}"#.utf8)

    @Test(arguments: ["PUT", "PATCH", "OPTIONS", "HEAD"])
    func anMCPCallInAnotherMethodIs405(method: String) throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), method, "/mcp",
            fields: [("Host", "app.example"), ("Content-Type", "application/json")], body: Self.call)
        Self.admitted(h)
        let outcome = h.run(try #require(h.stage(MCPStage.self)))
        #expect(outcome.answerStatus == 405)
        #expect(h.transport.head?.fields.first("Allow") == "GET, POST, DELETE")
        #expect(h.json["error"] as? String == "invalid_request")
        #expect(!h.transport.bodyRead, "the call is never read, nor forwarded")
        #expect(h.transport.closeAfter, "the unread body is not taken for a next request")
    }

    @Test(arguments: ["GET", "DELETE"])
    func anMCPGetOrDeleteWithContentIs400(method: String) throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), method, "/mcp",
            fields: [("Host", "app.example"), ("Content-Type", "application/json")], body: Self.call)
        Self.admitted(h)
        #expect(h.run(try #require(h.stage(MCPStage.self))).answerStatus == 400)
        #expect(h.json["error"] as? String == "invalid_request")
        #expect(!h.transport.bodyRead)
    }

    @Test func anMCPPreflightLetThroughPasses() throws {
        let h = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "OPTIONS", "/mcp",
            fields: [
                ("Host", "app.example"), ("Origin", "https://app.example"), ("Access-Control-Request-Method", "POST")
            ])
        h.request.admission = Admission(identity: [], session: false, body: nil, claims: JSONObject(), preflight: true)
        #expect(h.run(try #require(h.stage(MCPStage.self))).proceeds)
    }

    /// The decision stage of the harness's route, judging as its request-path stage does.
    static func decisionStage(_ h: StageHarness) throws -> MCPDecisionStage {
        MCPDecisionStage(judge: try #require(h.stage(MCPStage.self)))
    }

    @Test func aDecisionAboutAnMCPPostIsRefused() throws {
        let h = try StageHarness(try testWorker(PipelineConfigs.yaml), "POST", "/mcp")
        #expect(try Self.decisionStage(h).run(h.request).answerStatus == 403)
        let get = try StageHarness(try testWorker(PipelineConfigs.yaml), "GET", "/mcp")
        #expect(try Self.decisionStage(get).run(get.request).proceeds)
        // The ingress holds the body: another method, or content announced on a GET, is refused.
        let put = try StageHarness(try testWorker(PipelineConfigs.yaml), "PUT", "/mcp")
        #expect(try Self.decisionStage(put).run(put.request).answerStatus == 405)
        let withContent = try StageHarness(
            try testWorker(PipelineConfigs.yaml), "DELETE", "/mcp",
            fields: [("Host", "app.example"), ("Content-Length", "70")])
        #expect(try Self.decisionStage(withContent).run(withContent.request).answerStatus == 400)
    }

    /// MCP 2026-07-28: without the body, a POST is judged on its mirrored headers by the
    /// route's rules; without them (a 2025 client) it is still refused.
    @Test func aDecisionAboutA2026PostIsJudgedOnItsHeaders() throws {
        // The route takes 2026-07-28 only: its server must refuse a body unlike the headers.
        let only2026 = PipelineConfigs.yaml.replacingOccurrences(
            of: "mcp: { default: allow }", with: "mcp: { default: allow, protocol_versions: [2026-07-28] }")
        func decide(_ headers: [(String, String)], yaml: String = only2026) throws -> StageOutcome {
            let h = try StageHarness(try testWorker(yaml), "POST", "/mcp", fields: [("Host", "app.example")] + headers)
            Self.admitted(h)
            return try Self.decisionStage(h).run(h.request)
        }
        let v2026 = ("MCP-Protocol-Version", "2026-07-28")
        #expect(try decide([v2026, ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")]).proceeds)
        #expect(try decide([v2026, ("Mcp-Method", "tools/list")]).proceeds)
        #expect(try decide([v2026, ("Mcp-Method", "tools/call")]).answerStatus == 400, "no Mcp-Name")
        #expect(try decide([v2026, ("Mcp-Method", "tools/call"), ("Mcp-Name", "a,b")]).answerStatus == 400)
        #expect(try decide([("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "tools/list")]).answerStatus == 403)
        #expect(
            try decide([v2026, ("Origin", "https://evil.example"), ("Mcp-Method", "tools/list")]).answerStatus == 403)
        // A route that takes a 2025 revision too: its server may run the body whatever the
        // headers claim, so nothing is judged on them.
        #expect(
            try decide([v2026, ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")], yaml: PipelineConfigs.yaml)
                .answerStatus == 403)
    }

    static let exchangeYAML = TokenExchangeConfigTests.yaml(
        "name: api\nauth: bearer\nissuers: [one]\ntoken_exchange: { issuer: one, client: gw, endpoint: https://idp.one/token, audience: b }"
    )

    @Test func anExchangeWithoutThePresentedTokenIsTheGatewaysFault() throws {
        let h = try StageHarness(try testWorker(Self.exchangeYAML), "GET", "/api")
        Self.admitted(h, token: nil)
        let outcome = h.run(try #require(h.stage(TokenExchangeStage.self)))
        #expect(outcome.answerStatus == 500)
        #expect(h.json["error"] as? String == "server_error")
    }

    @Test func aPreflightIsNotExchanged() throws {
        let h = try StageHarness(try testWorker(Self.exchangeYAML), "GET", "/api")
        h.request.admission = Admission(
            identity: [], session: false, body: nil, claims: JSONObject(), preflight: true)
        #expect(h.run(try #require(h.stage(TokenExchangeStage.self))).proceeds)
        #expect(h.request.admission?.identity.isEmpty == true, "no Authorization for a preflight")
    }
}
