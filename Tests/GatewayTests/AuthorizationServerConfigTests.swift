import Foundation
import JOSE
import OAuth
import Reactor
import Testing

@testable import Gateway

/// `authorization_server:` as check-config reads it: its keys and defaults, `issuers: [self]`
/// for the routes that take its tokens, and each refusal.
@Suite("Authorization server: config")
struct AuthorizationServerConfigTests {
    let dir: String
    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("ascfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let key = try JWK.generate(for: .ES256, kid: "as-1")
        try JSONSerializer.serialize(.object(try key.privateJWK())).write(
            toFile: "\(dir)/as.jwk", atomically: true, encoding: .utf8)
        try JSONSerializer.serialize(.object(key.publicJWK())).write(
            toFile: "\(dir)/public.jwk", atomically: true, encoding: .utf8)
    }

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: dir, cores: 2)
    }

    func config(_ server: String, route: String = "issuers: [self]\n    resource: https://gw.example.com/mcp") -> String
    {
        """
        public_url: https://gw.example.com
        issuers:
          corp: { issuer: "https://idp.example.com", jwks_file: /dev/null, audiences: [api] }
        authorization_server:
          \(server)
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path: /mcp }
            upstream: a
            auth: bearer
            \(route)
        """
    }

    static let minimal = """
        signing_keys: [as.jwk]
          scopes: { "mcp:read": {}, "mcp:write": { claims: { groups: { contains: eng } } } }
          id_jag: { issuers: [corp] }
        """

    @Test func aServerWithItsDefaultsAndItsSelfIssuer() throws {
        let cfg = try parse(config(Self.minimal)).get()
        let server = try #require(cfg.authorizationServer)
        #expect(server.issuer == "https://gw.example.com" && server.accessTokenTTL == 600)
        #expect(server.scopes.map(\.name) == ["mcp:read", "mcp:write"] && server.identityAssertionIssuers == ["corp"])
        #expect(server.signingKeys.first?.kid == "as-1" && server.signingKeys.first?.alg == .ES256)
        #expect(server.publicKeys.keys.count == 1 && server.publicKeys.keys[0].isPrivate == false)
        let issuer = try #require(cfg.issuers["self"])
        #expect(issuer.issuer == "https://gw.example.com" && issuer.keys == .own && issuer.accessTokenType == "at+jwt")
        #expect(
            AuthorizationServerEndpoint.paths(of: server) == [
                "/.well-known/oauth-authorization-server": .metadata, "/oauth2/as/jwks": .jwks,
                "/oauth2/as/token": .token, "/oauth2/as/authorize": .authorize, "/oauth2/as/consent": .consent,
                "/oauth2/as/consents": .consents, "/oauth2/as/register": .register
            ])
        #expect(server.login == nil && server.consent && server.refreshTokenTTL == 86_400)
    }

    @Test(arguments: [
        ("scopes: { a: {} }", "signing_keys: is required"),
        ("signing_keys: [as.jwk]", "scopes: is required"),
        ("signing_keys: [public.jwk]\n  scopes: { a: {} }", "private"),
        ("signing_keys: [nowhere.jwk]\n  scopes: { a: {} }", "cannot read"),
        ("signing_keys: [as.jwk]\n  scopes: { offline_access: {} }", "never offline_access"),
        ("signing_keys: [as.jwk]\n  scopes: { \"a b\": {} }", "RFC 6749"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  access_token_ttl: 2h", "from 1m to 1h"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  issuer: http://gw.example.com", "not an https URL"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  id_jag: { issuers: [nobody] }", "\"nobody\" is not defined"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  id_jag: {}", "id_jag.issuers: is required"),
        (
            "signing_keys: [as.jwk]\n  scopes: { a: {} }\n  clients: { allowed_client_hosts: [\"https://x\"] }",
            "not a host name"
        ),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  login: corp", "\"corp\" is not a login client"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  refresh_token_ttl: 91d", "from 5m to 90d"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  consent_ttl: 30m", "from 1h to 365d"),
        ("signing_keys: [as.jwk]\n  scopes: { a: {} }\n  consent: maybe", "consent"),
        (
            "signing_keys: [as.jwk]\n  scopes: { a: {} }\n  consent: false",
            "consent: false needs clients.allowed_client_hosts"
        )
    ])
    func refused(_ server: String, _ why: String) {
        guard case .failure(let e) = parse(config(server)) else {
            Issue.record("accepted: \(server)")
            return
        }
        #expect(e.description.contains(why), "\(e.description)")
    }

    @Test func aRouteTakingItsTokensNeedsAResourceAndSelfIsReserved() {
        guard case .failure(let e) = parse(config(Self.minimal, route: "issuers: [self]")) else {
            Issue.record("accepted a route without resource")
            return
        }
        #expect(e.description.contains("needs resource"), "\(e.description)")
        let taken = config(Self.minimal).replacingOccurrences(
            of: "  corp: {",
            with: "  self: { issuer: \"https://x.example\", jwks_file: /dev/null, audiences: [a] }\n  corp: {")
        guard case .failure(let e2) = parse(taken) else {
            Issue.record("accepted an issuer named self")
            return
        }
        #expect(e2.description.contains("the name self is the authorization server's"), "\(e2.description)")
        // Without an authorization server, `self` is not defined.
        let without = config(Self.minimal).replacingOccurrences(
            of: "authorization_server:\n  " + Self.minimal, with: "")
        guard case .failure(let e3) = parse(without) else {
            Issue.record("accepted issuers: [self] without an authorization server")
            return
        }
        #expect(e3.description.contains("\"self\""), "\(e3.description)")
    }

    @Test func documentsAreKeptAsTheirCacheControlSaysWithinBounds() {
        #expect(ClientDocuments.age([("Cache-Control", "public, max-age=600")]) == 600)
        #expect(ClientDocuments.age([("cache-control", "max-age=5")]) == 60)
        #expect(ClientDocuments.age([("Cache-Control", "max-age=999999999")]) == 86_400)
        #expect(ClientDocuments.age([("Cache-Control", "no-store")]) == 60)
        #expect(ClientDocuments.age([]) == 300)
    }

    @Test func whichHostsADocumentIsFetchedFrom() throws {
        var server = AuthorizationServerConfig()
        server.issuer = "https://gw.example.com"
        server.clients.allowedHosts = ["*.example.com", "localhost"]
        let loop = EventLoop()
        let strict = ClientDocuments(loop: loop, wallClock: SystemClock(), config: server)
        #expect(strict.admits(try ClientIDURL("https://app.example.com/c.json")))
        #expect(!strict.admits(try ClientIDURL("https://example.com/c.json")))
        #expect(!strict.admits(try ClientIDURL("https://evil.test/c.json")))
        // Loopback: listed exactly, and only with the AS itself on loopback.
        #expect(!strict.admits(try ClientIDURL("https://localhost:8443/c.json")))
        server.issuer = "http://127.0.0.1:8080"
        let dev = ClientDocuments(loop: loop, wallClock: SystemClock(), config: server)
        #expect(dev.admits(try ClientIDURL("https://localhost:8443/c.json")))
        #expect(!dev.admits(try ClientIDURL("https://127.0.0.1:8443/c.json")))
        server.clients.allowedHosts = []
        let open = ClientDocuments(loop: loop, wallClock: SystemClock(), config: server)
        #expect(open.admits(try ClientIDURL("https://anything.example/c.json")))
        #expect(!open.admits(try ClientIDURL("https://localhost/c.json")))
    }
}
