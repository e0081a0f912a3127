import JOSE
import Testing

@testable import OAuth

/// RFC 8707 §2 resource identifiers, the RFC 9728 §3.1 metadata path derived from them, the
/// `aud` rule, and the §2 document.
@Suite("Protected resources: identifiers, metadata paths, aud, documents")
struct ProtectedResourceTests {
    func identifier(_ text: String) throws -> ResourceIdentifier {
        try ResourceIdentifier.parse(text).get()
    }

    @Test(arguments: [
        ("https://gw.example.com/mcp", "/.well-known/oauth-protected-resource/mcp"),
        ("https://gw.example.com", "/.well-known/oauth-protected-resource"),
        // §3.1: "any terminating slash (/) following the host component MUST be removed".
        ("https://gw.example.com/", "/.well-known/oauth-protected-resource"),
        ("https://gw.example.com:8443/a/b", "/.well-known/oauth-protected-resource/a/b"),
        ("https://gw.example.com/mcp/", "/.well-known/oauth-protected-resource/mcp/"),
        ("http://127.0.0.1:8080/mcp", "/.well-known/oauth-protected-resource/mcp"),
        ("http://[::1]:8080/x", "/.well-known/oauth-protected-resource/x"),
        ("http://localhost/x", "/.well-known/oauth-protected-resource/x")
    ])
    func metadataPathIsDerivedPerSection3_1(resource: String, path: String) throws {
        let id = try identifier(resource)
        #expect(id.metadataPath == path)
        let origin = "\(id.scheme)://\(id.authority)"
        #expect(resource.hasPrefix(origin))
        #expect(id.metadataURL == origin + path)
        #expect(id.uri == resource)
    }

    @Test func metadataURLOfTheRFCExample() throws {
        // RFC 9728 §3.1's example: resource https://resource.example.com/resource1.
        #expect(
            try identifier("https://resource.example.com/resource1").metadataURL
                == "https://resource.example.com/.well-known/oauth-protected-resource/resource1")
    }

    @Test(arguments: [
        ("http://gw.example.com/mcp", ResourceIdentifier.Problem.httpNotLoopback),
        ("http://127.0.0.2/mcp", .httpNotLoopback),
        ("https://gw.example.com/mcp#part", .fragment),
        ("https://gw.example.com/#", .fragment),
        ("https://gw.example.com/mcp?tenant=a", .query),
        ("/mcp", .notAbsolute),
        ("gw.example.com/mcp", .notAbsolute),
        ("https:///mcp", .notAbsolute),
        ("https://gw.example.com/a b", .notAbsolute),
        ("HTTPS://gw.example.com/mcp", .notHTTPS),
        ("ftp://gw.example.com/mcp", .notHTTPS),
        ("urn:example:mcp", .notAbsolute),
        ("https://user:pw@gw.example.com/mcp", .userinfo),
        ("https://gw_example.com/mcp", .host),
        ("https://[zz]/mcp", .host),
        ("https://gw.example.com:0/mcp", .port),
        ("https://gw.example.com:99999/mcp", .port),
        ("https://gw.example.com:/mcp", .port),
        ("https://gw.example.com/a/../mcp", .path),
        ("https://gw.example.com/./mcp", .path),
        ("https://gw.example.com//mcp", .path),
        ("https://gw.example.com/a%2Fb", .path),
        ("https://gw.example.com/a;b", .path),
        ("https://gw.example.com/a\\b", .path)
    ])
    func refusals(resource: String, problem: ResourceIdentifier.Problem) {
        #expect(throws: problem) { try ResourceIdentifier.parse(resource).get() }
    }

    @Test func audMustContainTheResourceExactly() throws {
        let id = try identifier("https://gw.example.com/mcp")
        func claims(_ aud: JSONValue?) -> JSONObject {
            var c = JSONObject()
            c["sub"] = .string("alice")
            if let aud { c["aud"] = aud }
            return c
        }
        #expect(id.isAudience(of: claims(.string("https://gw.example.com/mcp"))))
        #expect(id.isAudience(of: claims(.array([.string("api"), .string("https://gw.example.com/mcp")]))))
        for refused: JSONValue? in [
            nil, .string("api"), .string("https://gw.example.com/mcp/"), .string("https://GW.example.com/mcp"),
            .string("https://gw.example.com"), .array([]), .array([.string("api")]),
            .array([.array([.string("https://gw.example.com/mcp")])]), .number("1"), .null
        ] {
            #expect(!id.isAudience(of: claims(refused)), "\(String(describing: refused))")
        }
    }

    @Test func documentHasTheSection2MembersThatApply() throws {
        let bearer = ProtectedResourceMetadata(
            resource: try identifier("https://gw.example.com/mcp"), authorizationServers: ["https://login.example.com"],
            scopesSupported: ["mcp:tools"], resourceName: "MCP \"x\"")
        #expect(
            bearer.json
                == #"{"resource":"https://gw.example.com/mcp","authorization_servers":["https://login.example.com"],"#
                + #""scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"],"resource_name":"MCP \"x\""}"#
        )
        let dpop = ProtectedResourceMetadata(
            resource: try identifier("https://gw.example.com/"), authorizationServers: [],
            dpopSigningAlgValuesSupported: ["ES256"], dpopBoundAccessTokensRequired: true,
            resourceDocumentation: "https://docs.example.com/")
        let o = dpop.jsonObject
        #expect(o["scopes_supported"] == nil && o["authorization_servers"] == nil)
        #expect(o["dpop_signing_alg_values_supported"] == .array([.string("ES256")]))
        #expect(o["dpop_bound_access_tokens_required"] == .bool(true))
        #expect(o["resource_documentation"] == .string("https://docs.example.com/"))
        #expect(try JSONParser.parse(Array(dpop.json.utf8)).object == o)
    }

    @Test func challengeNamesTheMetadata() {
        let c = Challenge(
            scheme: "Bearer", realm: "tokengate", scope: ["a", "b"],
            resourceMetadata: "https://gw.example.com/.well-known/oauth-protected-resource/mcp")
        #expect(
            c.headerValue
                == #"Bearer realm="tokengate", scope="a b", resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp""#
        )
    }
}
