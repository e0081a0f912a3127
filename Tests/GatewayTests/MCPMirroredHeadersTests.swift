import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// SEP-2243 (MCP 2026-07-28): the mirrored headers against the body they mirror, from the
/// attacker's side: each way they can disagree is refused with `-32020`, and what agrees passes
/// whatever the case of the names, the whitespace around the values or the Base64 form.
@Suite("MCP: Mcp-Method, Mcp-Name and MCP-Protocol-Version against the body")
struct MCPMirroredHeadersTests {
    static let call2026 =
        #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{},"#
        + #""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    static let call2025 = #"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file"}}"#

    func verdict(_ body: String, _ headers: [(String, String)]) throws -> MCPHeaderMismatch? {
        let message = try MCPMessage.parse(Array(body.utf8)).get()
        var fields = HTTP1Fields()
        for (name, value) in headers { fields.append(name, value) }
        switch MCPMirroredHeaders.read(fields) {
        case .failure(let mismatch): return mismatch
        case .success(let read): return read.mismatch(with: message)
        }
    }

    static let agreeing = [
        ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "read_file")
    ]

    @Test func headersThatSayWhatTheBodySaysPass() throws {
        #expect(try verdict(Self.call2026, Self.agreeing) == nil)
        // Names in any case, values trimmed.
        #expect(
            try verdict(
                Self.call2026,
                [("mcp-protocol-version", " 2026-07-28"), ("MCP-METHOD", "tools/call\t"), ("mcp-name", "  read_file ")])
                == nil)
        // Fields whose names are as long as theirs but differ are not theirs.
        let alike = [("Mcp-Namx", "deploy"), ("Mcp-Methox", "tools/list"), ("MCP-Protocol-Versiox", "2025-06-18")]
        #expect(try verdict(Self.call2026, Self.agreeing + alike) == nil)
        // The Base64 sentinel form, for any name.
        let encoded = "=?base64?" + Base64.standard(Array("read_file".utf8)) + "?="
        #expect(try verdict(Self.call2026, Self.agreeing.dropLast() + [("Mcp-Name", encoded)]) == nil)
        let unicode = #"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"café ☕"}}"#
        let sentinel = "=?base64?" + Base64.standard(Array("café ☕".utf8)) + "?="
        #expect(try verdict(unicode, [("Mcp-Method", "tools/call"), ("Mcp-Name", sentinel)]) == nil)
        // A 2025 request carries none, and needs none.
        #expect(try verdict(Self.call2025, []) == nil)
        // A notification's headers are left undefined: none required, even at 2026-07-28.
        let note =
            #"{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        #expect(try verdict(note, []) == nil)
    }

    /// The finding: judged on `read_file` in the body, run as `deploy` by a server that trusts
    /// the header.
    @Test(arguments: [
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "deploy")],
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list"), ("Mcp-Name", "read_file")],
        [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "read_file")],
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "Tools/Call"), ("Mcp-Name", "read_file")],
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "READ_FILE")],
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?ZGVwbG95?=")],
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?!!?=")],
        [
            ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "read_file"),
            ("Mcp-Name", "deploy")
        ]
    ])
    func headersThatDisagreeAreRefused(_ headers: [(String, String)]) throws {
        #expect(try verdict(Self.call2026, headers) != nil)
    }

    @Test func atTheMirroringRevisionARequestNeedsEveryHeader() throws {
        for missing in Self.agreeing.indices {
            var headers = Self.agreeing
            headers.remove(at: missing)
            #expect(try verdict(Self.call2026, headers) != nil, "without \(Self.agreeing[missing].0)")
        }
        // The version said by the header alone is enough to require the others.
        #expect(try verdict(Self.call2025, [("MCP-Protocol-Version", "2026-07-28")]) != nil)
        // A method that names nothing needs no Mcp-Name.
        let list =
            #"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        #expect(try verdict(list, [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")]) == nil)
    }

    @Test func atAnyRevisionAPresentHeaderMustAgree() throws {
        #expect(try verdict(Self.call2025, [("Mcp-Name", "deploy")]) != nil)
        #expect(try verdict(Self.call2025, [("Mcp-Method", "tools/list")]) != nil)
        // A response carries no method: an Mcp-Method beside it says something it does not.
        let response = #"{"jsonrpc":"2.0","id":3,"result":{}}"#
        #expect(try verdict(response, [("Mcp-Method", "tools/call")]) != nil)
        #expect(try verdict(response, []) == nil)
    }

    @Test func theRefusalIsJSONRPCsHeaderMismatchWithTheRequestsIdAndNoHeaderText() throws {
        let mismatch = try #require(try verdict(Self.call2026, Self.agreeing.dropLast() + [("Mcp-Name", "evil\u{1}")]))
        let answer = mismatch.response(id: .number("7"))
        #expect(answer.status == 400)
        let body = try JSONParser.parseObject(Array(answer.body.utf8), what: "answer")
        #expect(body["id"] == .number("7"))
        #expect(body["error"]?.object?["code"] == .number("-32020"))
        #expect(!answer.body.contains("evil"))
    }
}

/// DNS rebinding from the attacker's side: a rebound name's Host and Origin, a foreign Origin,
/// an opaque one; and what the route's own name, a listed origin and no Origin at all get.
@Suite("MCP: Origin and Host against DNS rebinding")
struct MCPOriginTests {
    static func route(host: String? = nil) throws -> RouteConfig {
        let yaml = """
            listen: 127.0.0.1:8080
            issuers:
              one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
            upstreams:
              app: { url: "http://127.0.0.1:9" }
            routes:
              - match: { \(host.map { "host: \"\($0)\", " } ?? "")path: /mcp }
                upstream: app
                auth: bearer
                issuers: [one]
                mcp: {}
            """
        return try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get().routes[0]
    }

    @Test func withTheRoutesNameKnownARequestFromAnotherNameIsRefused() throws {
        let check = MCPOrigin(
            route: try Self.route(), publicURLs: [PublicURL(scheme: "https", authority: "mcp.example.com")],
            allowedOrigins: ["https://app.example.com"])
        #expect(check.refusal(host: "evil.example", scheme: "https", origin: "https://evil.example") != nil)
        #expect(check.refusal(host: "evil.example", scheme: "https", origin: nil) != nil)
        #expect(check.refusal(host: "mcp.example.com", scheme: "https", origin: "https://evil.example") != nil)
        #expect(check.refusal(host: "mcp.example.com", scheme: "https", origin: "null") != nil)
        #expect(check.refusal(host: "MCP.example.com:443", scheme: "https", origin: nil) == nil)
        #expect(check.refusal(host: "mcp.example.com", scheme: "https", origin: "https://mcp.example.com") == nil)
        #expect(check.refusal(host: "mcp.example.com", scheme: "https", origin: "https://APP.example.com") == nil)
        let hosted = MCPOrigin(route: try Self.route(host: "*.tools.example"), publicURLs: [], allowedOrigins: [])
        #expect(hosted.refusal(host: "a.tools.example", scheme: "https", origin: "https://a.tools.example") == nil)
        #expect(hosted.refusal(host: "a.tools.example", scheme: "https", origin: "https://evil.example") != nil)
    }

    @Test func withoutItAPresentOriginMustBeTheRequestsOwn() throws {
        let check = MCPOrigin(route: try Self.route(), publicURLs: [], allowedOrigins: [])
        #expect(check.refusal(host: "127.0.0.1:8080", scheme: "http", origin: nil) == nil)
        #expect(check.refusal(host: "127.0.0.1:8080", scheme: "http", origin: "http://127.0.0.1:8080") == nil)
        #expect(check.refusal(host: "127.0.0.1:8080", scheme: "http", origin: "http://evil.example") != nil)
        #expect(check.refusal(host: "127.0.0.1:8080", scheme: "http", origin: "https://127.0.0.1:8080") != nil)
        #expect(MCPOrigin.isOrigin("https://app.example.com:8443"))
        #expect(!MCPOrigin.isOrigin("https://app.example.com/path"))
        #expect(!MCPOrigin.isOrigin("app.example.com"))
    }
}

@Suite("MCP: OWS trimmed on the bytes")
struct TrimmingOWSTests {
    @Test func onlySpacesAndTabsAtTheEdgesGo() {
        #expect(" \t read_file \t ".trimmingOWS == "read_file")
        #expect("read file".trimmingOWS == "read file")
        #expect("  ".trimmingOWS == "")
        #expect("".trimmingOWS == "")
        #expect(" café ☕\t".trimmingOWS == "café ☕")
        // A line break or a no-break space is no OWS (RFC 9110 §5.6.3): kept.
        #expect("\u{A0}x\n".trimmingOWS == "\u{A0}x\n")
        // A Substring too.
        #expect("[ a ]".dropFirst().dropLast().trimmingOWS == "a")
    }
}
