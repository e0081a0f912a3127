import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import OAuth
@testable import Reactor

/// MCP routes without sockets: how a JSON-RPC message is read (and refused), which rules a
/// call must meet, what a POST's framing must be, and how `mcp:` is configured and refused.
@Suite("MCP routes: JSON-RPC messages, call rules, body framing, config")
struct MCPRulesTests {
    func message(_ text: String) -> Result<MCPMessage, JSONRPCError> { MCPMessage.parse(Array(text.utf8)) }

    @Test func requestsNotificationsAndResponsesAreRead() throws {
        let call = try message(
            #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{}}}"#
        )
        .get()
        #expect(call.method == "tools/call")
        #expect(call.target == .tool("add"))
        #expect(call.id == .number("7"))
        let read = try message(#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"file:///a"}}"#)
            .get()
        #expect(read.target == .resource("file:///a"))
        let prompt = try message(#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}"#).get()
        #expect(prompt.target == .prompt("p"))
        let note = try message(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).get()
        #expect(note.method == "notifications/initialized" && note.id == nil && note.target == nil)
        let response = try message(#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#).get()
        #expect(response.kind == .response && response.method == nil)
    }

    @Test(arguments: [
        // Two method members: each parser could pick another one.
        (#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"x"}}"#, -32700),
        (#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#, -32700),
        (#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600),
        (#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#, -32602),
        (#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#, -32602),
        (#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, -32602),
        (#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":["a"]}}"#, -32602),
        (#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["add"]}"#, -32600),
        (#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600),
        (#"{"id":1,"method":"ping"}"#, -32600),
        (#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, -32600),
        (#"{"jsonrpc":"2.0","id":1,"method":7}"#, -32600),
        (#"{"jsonrpc":"2.0","id":1,"method":""}"#, -32600),
        (#"{"jsonrpc":"2.0","id":1}"#, -32600),
        (#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#, -32600),
        (#"{"jsonrpc":"2.0","result":{}}"#, -32600),
        (#""tools/call""#, -32600),
        (#"{"jsonrpc":"2.0","id":1,"method":"ping",}"#, -32700),
        // A tools/list notification: an answer to it would be no response the filter knows.
        (#"{"jsonrpc":"2.0","method":"tools/list"}"#, -32600),
        (#"{"jsonrpc":"2.0","method":"tools/list","params":{}}"#, -32600),
        ("", -32700),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\u{0}", -32700)
    ])
    func malformedMessagesAreRefusedWithTheirJSONRPCCode(text: String, code: Int) {
        guard case .failure(let error) = message(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(error.code.rawValue == code, "\(text)")
        // The error object is itself valid JSON-RPC with the request's id, or null.
        let body = try? JSONParser.parseObject(Array(error.body.utf8), what: "error")
        #expect(body?["jsonrpc"]?.string == "2.0")
        #expect(body?["error"]?.object?["code"] == .number(String(code)))
        #expect(body?["id"] != nil)
    }

    @Test func anErrorEchoesTheRequestsId() throws {
        guard case .failure(let error) = message(#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{}}"#)
        else {
            Issue.record("accepted")
            return
        }
        let body = try JSONParser.parseObject(Array(error.body.utf8), what: "error")
        #expect(body["id"] == .string("abc"))
    }

    @Test func deepArgumentsAreAParseErrorNotACrash() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let text =
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":"# + deep + "}}}"
        guard case .failure(let error) = message(text) else {
            Issue.record("accepted")
            return
        }
        #expect(error.code == .parseError)
    }

    static let rules: MCPRules = {
        var r = MCPRules()
        r.methods["tools/list"] = AuthorizationRequirement(scopes: ["mcp:list"])
        r.tools["deploy"] = AuthorizationRequirement(scopes: ["mcp:deploy"])
        r.resources["file:///etc"] = AuthorizationRequirement(scopes: ["mcp:files"])
        r.prompts["secret"] = AuthorizationRequirement(scopes: ["mcp:prompts"])
        return r
    }()

    @Test func aCallNeedsItsMethodsRuleAndItsTargetsRule() throws {
        let r = Self.rules
        #expect(
            r.verdict(for: try message(#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#).get())
                == .check(method: nil, target: nil))
        #expect(
            r.verdict(for: try message(#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).get())
                == .check(method: AuthorizationRequirement(scopes: ["mcp:list"]), target: nil))
        #expect(
            r.verdict(
                for: try message(#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}"#).get())
                == .check(method: nil, target: AuthorizationRequirement(scopes: ["mcp:deploy"])))
        #expect(
            r.verdict(
                for: try message(
                    #"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///etc"}}"#
                )
                .get()) == .check(method: nil, target: AuthorizationRequirement(scopes: ["mcp:files"])))
        // Names are compared exactly: another case is another tool.
        let other = try message(#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Deploy"}}"#).get()
        #expect(r.verdict(for: other) == .check(method: nil, target: nil))
        var deny = r
        deny.allowsUnlisted = false
        #expect(deny.verdict(for: other) == .notAllowed(.tool("Deploy")))
        // default: deny is about tools, resources and prompts; methods pass on the route's rule.
        #expect(
            deny.verdict(for: try message(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).get())
                == .check(method: nil, target: nil))
        #expect(r.allRequirements.flatMap(\.scopes) == ["mcp:list", "mcp:deploy", "mcp:files", "mcp:prompts"])
    }

    @Test func aToolNameInAnotherEncodingIsTheSameTool() throws {
        var rules = MCPRules()
        rules.tools["d\u{E9}ploy"] = AuthorizationRequirement(scopes: ["mcp:deploy"])
        let needs = MCPRules.Verdict.check(method: nil, target: AuthorizationRequirement(scopes: ["mcp:deploy"]))
        // JSON escapes, and a decomposed é (NFD): names are compared after unescaping, as
        // canonically equivalent Unicode (Swift's String equality), so no spelling escapes the rule.
        for body in [
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"d\u00e9ploy"}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"de\u0301ploy"}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"de\u{301}ploy\"}}"
        ] {
            #expect(rules.verdict(for: try message(body).get()) == needs, "\(body)")
        }
    }

    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
        ("application/json;charset=\"UTF-8\"", true), ("application/json ; charset=utf-8 ", true),
        ("text/plain", false), ("application/json; charset=utf-16", false), ("application/json; charset=latin1", false),
        ("application/jsonx", false), ("application/json-seq", false), ("application/json; boundary=x", false),
        ("application/json; charset", false), ("multipart/form-data", false), ("", false),
        ("application/x-www-form-urlencoded", false)
    ])
    func onlyJSONInUTF8IsJudged(contentType: String, accepted: Bool) {
        let fields = HTTP1Fields([("Content-Type", contentType)])
        #expect((MCPBodyRules.refusal(fields) == nil) == accepted, "\(contentType)")
    }

    @Test func aSecondContentTypeOrAContentCodingIsRefused() {
        #expect(
            MCPBodyRules.refusal(HTTP1Fields([("Content-Type", "application/json"), ("Content-Type", "text/plain")]))
                != nil)
        #expect(MCPBodyRules.refusal(HTTP1Fields([("Content-Length", "2")])) != nil)
        #expect(
            MCPBodyRules.refusal(HTTP1Fields([("Content-Type", "application/json"), ("Content-Encoding", "gzip")]))
                != nil)
        #expect(
            MCPBodyRules.refusal(HTTP1Fields([("Content-Type", "application/json"), ("Content-Encoding", "identity")]))
                == nil)
        // The byte-level reading of the common case refuses what the general one refuses.
        #expect(
            MCPBodyRules.refusal(
                HTTP1Fields([("Content-Type", "application/json"), ("Content-Type", "application/json")]))
                != nil)
        for near in [
            "application/jso", "application/jsoN ", "application/json\u{0}", "applicationXjson", "APPLICATION/JSON"
        ] {
            let span = Array(near.utf8)
            #expect(
                MCPBodyRules.isPlainJSON(span.span) == (near == "APPLICATION/JSON"),
                "\(near)")
        }
    }
}

/// `mcp:` in the config: what it builds, and every refusal check-config gives.
@Suite("MCP routes: config")
struct MCPConfigTests {
    static func yaml(_ route: String) -> String {
        """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - match: { path: /mcp }
            upstream: app
        \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    func parse(_ route: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: Self.yaml(route), environment: [:], baseDirectory: "/", cores: 1)
    }

    func problems(_ route: String) -> [String] {
        if case .failure(let e) = parse(route) { return e.problems.map(\.description) }
        return []
    }

    @Test func protocolVersionsAreReadAndOnlyKnownOnesTaken() throws {
        let base = "auth: bearer\nissuers: [one]\nrequire: { scopes: [mcp] }\nmcp:\n  protocol_versions: "
        let only2026 = try parse(base + "[2026-07-28]").get()
        #expect(only2026.routes[0].options.auth.tokenRoute?.mcp?.protocolVersions == ["2026-07-28"])
        #expect(!MCPProtocolVersion.servesSessions(["2026-07-28"]))
        #expect(MCPProtocolVersion.servesSessions(MCPRules().protocolVersions))
        #expect(MCPRules().protocolVersions == ["2025-06-18", "2025-11-25", "2026-07-28"])
        #expect(problems(base + "[2024-11-05]").contains { $0.contains("is not an MCP revision tokengate speaks") })
        #expect(problems(base + "[]").contains { $0.contains("must name at least one revision") })
    }

    @Test func anUnsupportedRevisionIsRefusedWithTheSupportedOnes() throws {
        let answer = MCPProtocolVersion.refusal(requested: "2024-11-05", supported: ["2026-07-28"], id: .number("3"))
        #expect(answer.status == 400)
        let body = try JSONParser.parseObject(Array(answer.body.utf8), what: "answer")
        let error = try #require(body["error"]?.object)
        #expect(body["id"] == .number("3"))
        #expect(error["code"] == .number("-32022"))
        #expect(error["data"]?.object?["supported"] == .array([.string("2026-07-28")]))
        #expect(error["data"]?.object?["requested"] == .string("2024-11-05"))
    }

    @Test func rulesAreBuiltAndNamedInTheMetadata() throws {
        let cfg = try parse(
            """
            auth: bearer
            issuers: [one]
            resource: https://gw.example.com/mcp
            require: { scopes: [mcp] }
            mcp:
              default: deny
              max_request_bytes: 64KB
              max_response_bytes: 2MB
              methods: { "tools/list": { require: { scopes: [mcp:list] } } }
              tools: { deploy: { require: { scopes: [mcp:deploy] } }, add: { require: {} } }
              resources: { "FILE://localhost/x/../a": { require: { scopes: [mcp:files] } } }
              prompts: { p: { require: { claims: { role: admin } } } }
            """
        ).get()
        let rules = try #require(cfg.routes[0].options.auth.tokenRoute?.mcp)
        #expect(!rules.allowsUnlisted)
        #expect(rules.maxRequestBytes == 64 << 10)
        #expect(rules.maxResponseBytes == 2 << 20)
        #expect(MCPRules().maxResponseBytes == 4 << 20)
        #expect(rules.tools["deploy"]?.scopes == ["mcp:deploy"])
        #expect(rules.tools["add"]?.isEmpty == true)
        #expect(rules.methods["tools/list"]?.scopes == ["mcp:list"])
        // Kept as calls are compared: normalized (RFC 3986 §6.2.2, RFC 8089).
        #expect(rules.resources == ["file:///a": AuthorizationRequirement(scopes: ["mcp:files"])])
        #expect(rules.prompts["p"]?.claims.count == 1)
        let doc = try #require(cfg.protectedResources.values.first)
        #expect(doc.metadata.scopesSupported == ["mcp", "mcp:list", "mcp:deploy", "mcp:files"])
    }

    @Test(arguments: [
        ("auth: none\nmcp: {}", "routes[0].mcp: needs auth: bearer, dpop, token or api_key"),
        ("auth: bearer\nissuers: [one]\nmcp: { default: maybe }", "routes[0].mcp.default: must be allow or deny"),
        (
            "auth: bearer\nissuers: [one]\nmcp: { max_request_bytes: 0 }",
            "routes[0].mcp.max_request_bytes: must be between"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { max_request_bytes: 1GB }",
            "routes[0].mcp.max_request_bytes: must be between"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { max_response_bytes: 0 }",
            "routes[0].mcp.max_response_bytes: must be between"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { max_response_bytes: 65MB }",
            "routes[0].mcp.max_response_bytes: must be between"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { tool: {} }",
            "routes[0].mcp.tool: is not a known key; did you mean \"tools\"?"
        ),
        ("auth: bearer\nissuers: [one]\nmcp: { tools: { x: {} } }", "routes[0].mcp.tools.x: needs require"),
        (
            "auth: bearer\nissuers: [one]\nmcp: { tools: { x: { scopes: [a] } } }",
            "routes[0].mcp.tools.x.scopes: is not a known key; known keys: require"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { tools: { x: { require: { scope: [a] } } } }",
            "routes[0].mcp.tools.x.require.scope: is not a known key"
        ),
        (
            "auth: bearer\nissuers: [one]\ntoken_in_body: true\nmcp: {}",
            "routes[0].token_in_body: cannot be used with mcp"
        ),
        (
            "auth: login_or_token\nclient: c\nissuers: [one]\nmcp: {}",
            "routes[0].mcp: needs auth: bearer, dpop, token or api_key"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { resources: { \"file:///a//b\": { require: {} } } }",
            "routes[0].mcp.resources.file:///a//b: a resource URI no call could name: an empty path segment"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { resources: { \"a/b\": { require: {} } } }",
            "routes[0].mcp.resources.a/b: a resource URI no call could name: not an absolute URI"
        ),
        (
            "auth: bearer\nissuers: [one]\nmcp: { resources: { \"file:///a\": { require: {} }, \"file://localhost/a\": { require: {} } } }",
            "the same resource as"
        )
    ])
    func aBadMCPSectionIsRefusedAtItsKey(route: String, expected: String) {
        let found = problems(route)
        #expect(found.contains { $0.contains(expected) }, "\(found)")
    }

    @Test func forwardingTheClientsTokenIsWarnedAbout() throws {
        let cfg = try parse("auth: bearer\nissuers: [one]\nforward_token: true\nmcp: {}").get()
        #expect(cfg.warnings.contains { $0.path == "routes[0].forward_token" && $0.message.contains("passthrough") })
    }
}
