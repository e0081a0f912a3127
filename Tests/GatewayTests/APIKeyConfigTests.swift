import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// `api_keys:` sets and routes that take keys: what check-config accepts, what it refuses
/// with a reason, and where a route finds a key in a request.
@Suite("Config: api_keys and routes that take keys")
struct APIKeyConfigTests {
    let dir: String
    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("apikeycfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let made = try APIKeyEditing.create(.init(sub: "partner", clientID: "sync", scopes: ["orders:read"]), in: [])
        try APIKeyFile.render(made.entries).write(toFile: "\(dir)/partners.yaml", atomically: true, encoding: .utf8)
        try "- id: x\n".write(toFile: "\(dir)/broken.yaml", atomically: true, encoding: .utf8)
    }

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: dir, cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    func config(sets: String = "partners: { file: partners.yaml }", route: String) -> String {
        """
        issuers:
          corp: { issuer: "https://idp.example.com/", jwks_file: /dev/null, audiences: [api] }
          bank: { issuer: "https://as.bank.example", jwks_file: /dev/null, audiences: [api], profile: fapi2 }
        api_keys:
          \(sets)
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - match: { path_prefix: / }
            upstream: a
            \(route)
        """
    }

    @Test func aRouteTakesKeysBesideTokensOrAlone() throws {
        let mixed = try parse(config(route: "auth: bearer\n    issuers: [corp]\n    api_keys: partners")).get()
        let tokens = try #require(mixed.routes[0].options.auth.tokenRoute)
        #expect(tokens.apiKeySets == ["partners"] && !tokens.keysOnly && tokens.issuers == ["corp"])
        #expect(mixed.apiKeySets["partners"]?.entries.count == 1)
        #expect(mixed.apiKeySets["partners"]?.file == "\(dir)/partners.yaml")
        let alone = try parse(
            config(route: "auth: api_key\n    api_keys: [partners]\n    require: { scopes: [orders:read] }")
        )
        .get()
        let keys = try #require(alone.routes[0].options.auth.tokenRoute)
        #expect(keys.keysOnly && keys.issuers.isEmpty && keys.requirement.scopes == ["orders:read"])
        #expect(StatusReport.authMode(alone.routes[0].options.auth) == .api_key)
    }

    @Test(arguments: [
        ("auth: dpop\n    issuers: [corp]\n    api_keys: partners", "proof of possession"),
        ("auth: api_key", "auth: api_key needs api_keys"),
        ("auth: api_key\n    api_keys: others", "\"others\" is not defined"),
        ("auth: api_key\n    api_keys: partners\n    issuers: [corp]", "takes keys only"),
        ("auth: api_key\n    api_keys: partners\n    forward_token: true", "has no effect with auth: api_key"),
        ("auth: none\n    api_keys: partners", "has no effect with auth: none"),
        ("auth: login\n    client: web\n    api_keys: partners", "refused on login routes"),
        (
            "auth: bearer\n    issuers: [corp]\n    api_keys: partners\n    token_exchange: { issuer: corp, audience: b }",
            "no token to exchange"
        ),
        ("auth: bearer\n    issuers: [bank]\n    api_keys: partners", "a key is a bearer credential"),
        (
            "auth: bearer\n    issuers: [corp]\n    api_keys: partners\n    token_in_query: true",
            "cannot be used with api_keys"
        ),
        (
            "auth: bearer\n    issuers: [corp]\n    api_keys: partners\n    token_in_body: true",
            "cannot be used with api_keys"
        )
    ])
    func routesThatCannotTakeKeysAreRefused(route: String, why: String) {
        #expect(problems(config(route: route)).contains(why), "\(route)")
    }

    @Test(arguments: [
        ("partners: { file: missing.yaml }", "cannot read"),
        ("partners: { file: broken.yaml }", "line 1: digest is missing"),
        ("partners: { header: X-Key }", "api_keys.partners.file: is required"),
        ("partners: { file: partners.yaml, header: Authorization }", "say scheme"),
        ("partners: { file: partners.yaml, scheme: Bearer }", "a scheme of its own"),
        ("partners: { file: partners.yaml, scheme: ApiKey, header: X-Key }", "not both"),
        ("corp: { file: partners.yaml }", "an issuer has this name too"),
        ("partners: { file: partners.yaml, header: Cookie }", "has a meaning of its own"),
        ("partners: { file: partners.yaml, header: X-Forwarded-For }", "has a meaning of its own"),
        ("partners: { file: partners.yaml, header: Content-Length }", "has a meaning of its own"),
        ("\"a b\": { file: partners.yaml }", "a key set's name")
    ])
    func setsThatCannotBeUsedAreRefused(sets: String, why: String) {
        #expect(problems(config(sets: sets, route: "auth: none")).contains(why), "\(sets)")
    }

    func fields(_ pairs: [(String, String)]) -> HTTP1Fields {
        var f = HTTP1Fields()
        for (n, v) in pairs { f.append(n, v) }
        return f
    }

    @Test func aRouteFindsItsKeyWhereItsSetsSay() {
        var header = APIKeySetConfig(name: "h")
        header.file = "/dev/null"
        var scheme = APIKeySetConfig(name: "s")
        scheme.header = nil
        scheme.scheme = "ApiKey"
        var shared = APIKeySetConfig(name: "h2")
        shared.file = "/dev/null"
        let where_ = APIKeyLocations(sets: ["h", "s", "h2"], ["h": header, "s": scheme, "h2": shared])
        #expect(where_.fields == [Array("x-api-key".utf8)])
        #expect(where_.challengeScheme == "ApiKey")
        #expect(where_.presented(fields([("Host", "a")])) == .none)
        #expect(
            where_.presented(fields([("x-api-key", " tgk_abc ")]))
                == .key(Array("tgk_abc".utf8), sets: ["h", "h2"], inAuthorization: false))
        #expect(
            where_.presented(fields([("Authorization", "apikey  tgk_abc")]))
                == .key(Array("tgk_abc".utf8), sets: ["s"], inAuthorization: true))
        // Another scheme is a token's business, not a key.
        #expect(where_.presented(fields([("Authorization", "Bearer tgk_abc")])) == .none)
        #expect(where_.presented(fields([("Authorization", "ApiKeyX tgk_abc")])) == .none)
        if case .ambiguous = where_.presented(fields([("X-API-Key", "a"), ("X-API-Key", "b")])) {
        } else {
            Issue.record("a key field twice is not refused")
        }
        if case .ambiguous = where_.presented(fields([("X-API-Key", "a"), ("Authorization", "ApiKey b")])) {
        } else {
            Issue.record("two keys are not refused")
        }
    }
}
