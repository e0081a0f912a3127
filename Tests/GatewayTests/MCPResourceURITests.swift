import Foundation
import Testing

@testable import Gateway
@testable import OAuth

/// How `mcp.resources` rules and the URIs calls name are compared: every spelling of a
/// resource in one form (RFC 3986 §6.2.2, RFC 8089), and the spellings a server could read as
/// another resource refused.
@Suite("MCP resource URIs: RFC 3986 normalization, RFC 8089 file URIs")
struct MCPResourceURITests {
    static let secrets = "file:///srv/secrets.txt"

    @Test(arguments: [
        "file:///srv/secrets.txt",
        "file:///srv/./secrets.txt",
        "file:///srv/x/../secrets.txt",
        "file://localhost/srv/secrets.txt",
        "file://LocalHost/srv/secrets.txt",
        "FILE:///srv/secrets.txt",
        "File:///srv/secrets.txt",
        "file:///srv/secrets%2etxt",
        "file:///%73rv/secrets.txt",
        "file:///srv/%2E/secrets.txt",
        "file:///srv/x/%2e%2E/secrets.txt",
        "file:/srv/secrets.txt",
        "file:/srv/./x/../secrets.txt"
    ])
    func equivalentSpellingsAreOneResource(uri: String) throws {
        #expect(try ResourceURI.normalized(uri).get() == Self.secrets)
    }

    @Test func otherSchemesAreNormalizedBySyntaxOnly() throws {
        #expect(
            try ResourceURI.normalized("HTTPS://Example.COM/A/%7euser/./b").get() == "https://example.com/A/~user/b")
        #expect(try ResourceURI.normalized("db://h/t?q=%2f%41").get() == "db://h/t?q=%2FA")
        #expect(try ResourceURI.normalized("urn:isbn:0451450523").get() == "urn:isbn:0451450523")
        // Bytes a URI may not hold are encoded, as a server that decodes reads them the same.
        #expect(try ResourceURI.normalized("file:///srv/se cr\u{E9}t").get() == "file:///srv/se%20cr%C3%A9t")
        #expect(try ResourceURI.normalized("file:///srv/se%20cr%c3%a9t").get() == "file:///srv/se%20cr%C3%A9t")
        // Only localhost is the empty file host; another host is kept, in lower case.
        #expect(try ResourceURI.normalized("file://Host/srv").get() == "file://host/srv")
        // A trailing slash names a collection and stays.
        #expect(try ResourceURI.normalized("file:///srv/docs/").get() == "file:///srv/docs/")
        #expect(try ResourceURI.normalized("file:///srv/docs/x/..").get() == "file:///srv/docs/")
    }

    @Test(arguments: [
        ("file:///srv//secrets.txt", "empty path segment"),
        ("file:////srv/secrets.txt", "empty path segment"),
        ("file:///../srv/secrets.txt", "above the root"),
        ("file:///srv/../../secrets.txt", "above the root"),
        ("file:///srv%2Fsecrets.txt", "encoded '/'"),
        ("file:///srv%5csecrets.txt", "encoded '/'"),
        ("file:///srv\\secrets.txt", "'\\'"),
        ("file:///srv/secrets.txt%00", "control"),
        ("file:///srv/secrets.txt\n", "control"),
        ("file:///srv/secrets%2", "malformed percent"),
        ("file:///srv/secrets%zz", "malformed percent"),
        ("file:///srv/secrets.txt#x", "fragment"),
        ("file:srv/secrets.txt", "path is absolute"),
        ("file://localhost", "path is absolute"),
        ("secrets.txt", "absolute URI"),
        ("/srv/secrets.txt", "absolute URI"),
        ("1file:///srv", "absolute URI"),
        ("", "absolute URI")
    ])
    func spellingsAServerCouldReadOtherwiseAreRefused(uri: String, reason: String) {
        guard case .failure(let refusal) = ResourceURI.normalized(uri) else {
            Issue.record("accepted: \(uri)")
            return
        }
        #expect(refusal.reason.contains(reason), "\(uri): \(refusal.reason)")
    }

    @Test func normalizationIsIdempotent() throws {
        for uri in ["file:/a/./b/../c%7e", "HTTP://X/%41%2a?%7e", "x:a/b/../c", "file://localhost/"] {
            let once = try ResourceURI.normalized(uri).get()
            #expect(try ResourceURI.normalized(once).get() == once, "\(uri)")
        }
    }

    func rules(_ uri: String) throws -> MCPRules {
        var rules = MCPRules()
        rules.resources[try ResourceURI.normalized(uri).get()] = AuthorizationRequirement(scopes: ["mcp:files"])
        return rules
    }

    func read(_ uri: String) -> Result<MCPMessage, JSONRPCError> {
        let escaped = uri.replacingOccurrences(of: "\\", with: "\\\\")
        return MCPMessage.parse(
            Array(#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"\#(escaped)"}}"#.utf8))
    }

    @Test func aCallInAnotherSpellingMeetsTheResourcesRule() throws {
        let rules = try rules("FILE://localhost/srv/./secrets.txt")
        for uri in ["file:///srv/secrets%2etxt", "file:/srv/x/../secrets.txt", "file:///srv/secrets.txt?raw=1"] {
            let message = try read(uri).get()
            #expect(
                rules.verdict(for: message)
                    == .check(method: nil, target: AuthorizationRequirement(scopes: ["mcp:files"])), "\(uri)")
        }
        // Another resource is not this one.
        #expect(try rules.verdict(for: read("file:///srv/secrets.txt2").get()) == .check(method: nil, target: nil))
    }

    @Test func aCallNamingAnUnreadableURIIsInvalidParams() {
        for uri in ["file:///srv//secrets.txt", "file:///../secrets.txt", "file:///srv%2fsecrets.txt"] {
            guard case .failure(let error) = read(uri) else {
                Issue.record("accepted: \(uri)")
                continue
            }
            #expect(error.code == .invalidParams)
            #expect(error.id == .number("1"))
        }
    }
}
