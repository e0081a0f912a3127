import JOSE
import Testing

@testable import OAuth

/// Clients registered at this AS (RFC 7591): their ids, which never pass for a document URL,
/// and their metadata, checked as a document's is but public only.
@Suite("Authorization server: registered clients")
struct RegisteredClientTests {
    static let id = ClientIdentifier.registeredPrefix + Base64URL.encode([UInt8](repeating: 9, count: 16))

    @Test func anIdIsADocumentURLOrOneThisServerIssued() {
        #expect(ClientIdentifier("https://app.example/c.json")?.host == "app.example")
        #expect(ClientIdentifier(Self.id) == .registered(Self.id))
        #expect(ClientIdentifier(Self.id)?.host == nil && ClientIdentifier(Self.id)?.isRegistered == true)
        guard case .registered(let fresh) = ClientIdentifier.newRegistered() else {
            Issue.record("not a registered id")
            return
        }
        #expect(ClientIdentifier(fresh) == .registered(fresh) && fresh != Self.id)
        for bad in ["app", "tg-dcr-", "tg-dcr-short", Self.id + "x", "http://app.example/c.json", ""] {
            #expect(ClientIdentifier(bad) == nil, "\(bad)")
        }
    }

    @Test func registeredMetadataIsAPublicClientsDocument() throws {
        let body =
            #"{"redirect_uris":["https://client.example/cb"],"client_name":"Old agent","grant_types":["authorization_code","refresh_token"]}"#
        let d = try ClientIDMetadataDocument(registration: Array(body.utf8), clientID: Self.id)
        #expect(d.clientID == .registered(Self.id) && d.name == "Old agent")
        #expect(d.grantTypes == ["authorization_code", "refresh_token"])
        #expect(d.redirectURI(matching: "https://client.example/cb") != nil)
        guard case .none = d.authentication else {
            Issue.record("a registered client with keys")
            return
        }
    }

    @Test(arguments: [
        (#"{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}"#, "public"),
        (#"{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"client_secret_post"}"#, "public"),
        (#"{"redirect_uris":["https://c.example/cb"],"client_secret":"x"}"#, "client_secret"),
        (#"{"redirect_uris":["https://c.example/cb"],"jwks":{"keys":[]}}"#, "jwks"),
        (#"{"redirect_uris":["https://c.example/cb"],"client_id":"https://c.example/c.json"}"#, "client_id"),
        (#"{"redirect_uris":["http://c.example/cb"]}"#, "redirect"),
        (#"{"redirect_uris":[]}"#, "redirect_uris"),
        (#"{"redirect_uris":["https://c.example/cb"],"grant_types":["password"]}"#, "grant_types"),
        (#"["https://c.example/cb"]"#, "not a JSON object")
    ])
    func refused(_ body: String, _ why: String) {
        do {
            _ = try ClientIDMetadataDocument(registration: Array(body.utf8), clientID: Self.id)
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.description.contains(why), "\(error.description)")
        }
    }

    @Test func moreThanFiveKilobytesIsRefused() {
        let body =
            #"{"redirect_uris":["https://c.example/cb"],"client_name":""# + String(repeating: "x", count: 5200) + "\"}"
        #expect(throws: ClientIDMetadataDocument.Refusal.self) {
            try ClientIDMetadataDocument(registration: Array(body.utf8), clientID: Self.id)
        }
    }
}
