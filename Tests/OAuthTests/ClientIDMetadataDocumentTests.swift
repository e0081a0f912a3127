import JOSE
import Testing

@testable import OAuth

/// Client ID Metadata Documents as the authorization server checks them
/// (draft-ietf-oauth-client-id-metadata-document): the `client_id` URL's grammar, each
/// refusal of a document, redirect URIs (RFC 8252 §7, RFC 9700 §4.1.1) and their exact
/// matching with loopback ports free.
@Suite("Authorization server: client ID metadata documents")
struct ClientIDMetadataDocumentTests {
    static let url = "https://app.example.com/oauth/client.json"

    @Test(arguments: [
        ("http://app.example.com/c.json", ClientIDURL.Refusal.notHTTPS),
        ("https://app.example.com", .noPath),
        ("https://app.example.com/", .noPath),
        ("https://user:pw@app.example.com/c.json", .userinfo),
        ("https://app.example.com/c.json#x", .fragment),
        ("https://app.example.com/c.json?v=1", .query),
        ("https://app.example.com/a/../c.json", .dotSegment),
        ("https://app.example.com/a/%2E%2e/c.json", .dotSegment),
        ("https://app.example.com/./c.json", .dotSegment),
        ("https://app.example.com:0/c.json", .badPort),
        ("https://app.example.com:99999/c.json", .badPort),
        ("https:///c.json", .noHost),
        ("https://app.exämple.com/c.json", .notASCII),
        ("https://app.example.com/c json", .notASCII),
        ("https://app.exa\"mple.com/c.json", .characters),
        ("https://app.example.com/c<x>.json", .characters),
        ("https://app.example.com/c%zz.json", .characters),
        ("https://app..example.com/c.json", .characters),
        ("https://[::1/c.json", .noHost)
    ])
    func refusedClientIDs(_ text: String, _ refusal: ClientIDURL.Refusal) {
        #expect(throws: refusal) { try ClientIDURL(text) }
    }

    @Test func aGoodClientIDAndHostPatterns() throws {
        let u = try ClientIDURL("https://App.Example.com:8443/oauth/client.json")
        #expect(u.host == "app.example.com" && u.port == 8443 && u.path == "/oauth/client.json")
        #expect(
            u.hostMatches("app.example.com") && u.hostMatches("*.example.com") && !u.hostMatches("*.app.example.com"))
        let apex = try ClientIDURL("https://example.com/c.json")
        #expect(!apex.hostMatches("*.example.com"))  // a wildcard names sub-domains only
        #expect(try ClientIDURL("https://[::1]:9/c.json").host == "::1")
        #expect(ClientIDURL.looksLikeURL(Self.url) && !ClientIDURL.looksLikeURL("my-client"))
    }

    @Test func redirectURIsAndTheirMatching() throws {
        for bad in [
            "http://app.example.com/cb", "javascript:alert(1)", "data:text/html,x", "https://a.example/cb#f",
            "https://u@a.example/cb", "myapp:/cb", "file:///etc/passwd", "https://", "https://a\"b.example/cb",
            "http://127.0.0.1:x/cb", "https://a.example/c<b>", "https://a.example/%g0"
        ] {
            #expect(throws: RedirectURI.Refusal.self, "\(bad)") { try RedirectURI(bad) }
        }
        let https = try RedirectURI("https://app.example.com/cb?x=1")
        #expect(https.matches("https://app.example.com/cb?x=1"))
        #expect(!https.matches("https://app.example.com/cb?x=2") && !https.matches("https://app.example.com/cb"))
        #expect(
            !https.matches("https://app.example.com/cb?x=1&y=2") && !https.matches("https://APP.example.com/cb?x=1"))
        // RFC 8252 §7.3: a loopback redirect on any port, the rest exactly.
        let loopback = try RedirectURI("http://127.0.0.1/callback")
        #expect(loopback.matches("http://127.0.0.1:53117/callback") && loopback.matches("http://127.0.0.1/callback"))
        #expect(
            !loopback.matches("http://127.0.0.1:53117/callback/x") && !loopback.matches("http://localhost:1/callback"))
        #expect(!loopback.matches("https://127.0.0.1:53117/callback"))
        // Only the port may differ, not even the case of the rest (ASFuzz found "httP://").
        #expect(!loopback.matches("httP://127.0.0.1:4711/callback"))
        #expect(!(try RedirectURI("http://localhost/cb")).matches("http://LOCALHOST:1/cb"))
        #expect(try RedirectURI("http://[::1]:80/cb").matches("http://[::1]:9000/cb"))
        #expect(try RedirectURI("com.example.app:/oauth").matches("com.example.app:/oauth"))
    }

    func document(_ members: String) -> [UInt8] { Array("{\"client_id\":\"\(Self.url)\",\(members)}".utf8) }

    @Test func aGoodDocument() throws {
        let d = try ClientIDMetadataDocument(
            document(
                #""client_name":"Example\u0007 MCP","redirect_uris":["http://127.0.0.1/cb","https://app.example.com/cb"],"client_uri":"https://app.example.com","grant_types":["authorization_code","refresh_token"],"response_types":["code"]"#
            ), fetchedFrom: try ClientIDURL(Self.url))
        #expect(d.name == "Example MCP" && d.clientURI == "https://app.example.com")
        #expect(d.redirectURI(matching: "http://127.0.0.1:4000/cb")?.text == "http://127.0.0.1/cb")
        #expect(d.redirectURI(matching: "https://evil.example/cb") == nil)
        #expect(d.grantTypes == ["authorization_code", "refresh_token"])
        guard case .none = d.authentication else {
            Issue.record("a document without a method is a public client")
            return
        }
    }

    @Test func aPrivateKeyJWTClientBringsPublicKeys() throws {
        let key = try JWK.generate(for: .ES256, kid: "c1")
        let jwk = JSONSerializer.serialize(.object(key.publicJWK()))
        let d = try ClientIDMetadataDocument(
            document(
                #""redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":["#
                    + jwk + "]}"), fetchedFrom: try ClientIDURL(Self.url))
        guard case .privateKeyJWT(let keys?, nil) = d.authentication else {
            Issue.record("no keys")
            return
        }
        #expect(keys.keys.first?.kid == "c1")
    }

    @Test(arguments: [
        (#""redirect_uris":["https://app.example.com/cb"]"#, "https://app.example.com/other.json", "not the URL"),
        (#""redirect_uris":[]"#, url, "redirect_uris"),
        (#""redirect_uris":["http://app.example.com/cb"]"#, url, "not loopback"),
        (#""redirect_uris":["https://app.example.com/cb"],"client_secret":"s""#, url, "client_secret"),
        (
            #""redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"client_secret_basic""#, url,
            "none or private_key_jwt"
        ),
        (
            #""redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"private_key_jwt""#, url,
            "jwks or jwks_uri"
        ),
        (
            #""redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[{"kty":"oct","k":"AAAA"}]}"#,
            url, "private or symmetric"
        ),
        (#""redirect_uris":["https://app.example.com/cb"],"grant_types":["password"]"#, url, "grant_types"),
        (#""redirect_uris":["https://app.example.com/cb"],"response_types":["token"]"#, url, "response_types")
    ])
    func refusedDocuments(_ members: String, _ from: String, _ why: String) throws {
        let url = try ClientIDURL(from)
        do throws(ClientIDMetadataDocument.Refusal) {
            _ = try ClientIDMetadataDocument(document(members), fetchedFrom: url)
            Issue.record("accepted: \(members)")
        } catch {
            #expect(error.description.contains(why), "\(error.description)")
        }
    }

    @Test func aDocumentOver5KBOrNotAnObjectIsRefused() throws {
        let url = try ClientIDURL(Self.url)
        let padding = String(repeating: "x", count: 5 * 1024)
        #expect(throws: ClientIDMetadataDocument.Refusal.self) {
            try ClientIDMetadataDocument(
                document(#""redirect_uris":["https://a.example/cb"],"p":""# + padding + "\""), fetchedFrom: url)
        }
        #expect(throws: ClientIDMetadataDocument.Refusal.self) {
            try ClientIDMetadataDocument(Array("[]".utf8), fetchedFrom: url)
        }
    }
}
