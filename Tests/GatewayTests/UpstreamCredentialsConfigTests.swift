import Foundation
import Testing

@testable import Gateway
@testable import Reactor

/// `upstreams.NAME.credentials`: what check-config accepts, what it refuses with a reason, what
/// a secret file's bytes become, and which client fields a route toward such an upstream drops.
@Suite("Config: upstream credentials")
struct UpstreamCredentialsConfigTests {
    let dir: String
    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("upcred-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "s3cret-value\n".write(toFile: "\(dir)/secret", atomically: true, encoding: .utf8)
        try "two\r\nlines\n".write(toFile: "\(dir)/crlf", atomically: true, encoding: .utf8)
    }

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: dir, cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    func config(credentials: String, route: String = "auth: none") -> String {
        """
        issuers:
          as1: { issuer: "https://as.example", discovery: true, audiences: [api] }
          local: { issuer: "https://local.example", jwks_file: /dev/null, audiences: [api] }
        clients:
          caller: { issuer: as1, client_id: caller, auth: client_secret_basic, secret: "0123456789abcdef0123456789" }
          orphan: { client_id: orphan, auth: client_secret_basic, secret: "0123456789abcdef0123456789" }
          localcaller: { issuer: local, client_id: lc, auth: client_secret_basic, secret: "0123456789abcdef0123456789" }
        upstreams:
          a:
            url: "http://127.0.0.1:1"
            credentials: \(credentials)
        routes:
          - match: { path_prefix: / }
            upstream: a
            \(route)
        """
    }

    @Test func aStaticSecretIsReadTrimmedAndItsFieldIsTheRoutes() throws {
        let cfg = try parse(config(credentials: "{ header: { name: X-Billing-Key, value_file: secret } }")).get()
        guard case .header(let header) = cfg.upstreams["a"]?.credentials else {
            Issue.record("no header credential")
            return
        }
        #expect(header.name == "X-Billing-Key" && header.value == "s3cret-value" && header.file == "\(dir)/secret")
        let plan = RoutePlan(
            route: SharedRoute(cfg.routes[0]), pool: nil, metricID: 0,
            upstream: cfg.upstreams["a"].map(SharedUpstream.init))
        #expect(plan.ownedFields == [Array("x-billing-key".utf8)] && plan.forwardsCredential)
    }

    @Test func aClientCredentialsTokenTakesTheClientsAuthorizationsPlace() throws {
        let cfg = try parse(
            config(credentials: #"{ client_credentials: { client: caller, scope: "billing:write" } }"#)
        ).get()
        guard case .clientCredentials(let grant) = cfg.upstreams["a"]?.credentials else {
            Issue.record("no client_credentials credential")
            return
        }
        #expect(grant.clientName == "caller" && grant.issuer == "as1" && grant.scope == "billing:write")
        #expect(grant.endpoint == nil && grant.issuerURL == "https://as.example")
        let plan = RoutePlan(
            route: SharedRoute(cfg.routes[0]), pool: nil, metricID: 0,
            upstream: cfg.upstreams["a"].map(SharedUpstream.init))
        // The client's Authorization is dropped (the token goes in its place), not an owned field.
        #expect(!plan.forwardsCredential && plan.ownedFields.isEmpty)
    }

    @Test(arguments: [
        ("{ header: { name: X-K, value_file: secret }, client_credentials: { client: caller } }", "not both"),
        ("{}", "needs header: { name, value_file } or client_credentials"),
        ("{ header: { name: X-K } }", "value_file: is required"),
        ("{ header: { value_file: secret } }", "name: is required"),
        ("{ header: { name: X-K, value_file: nowhere } }", "nowhere is gone"),
        ("{ header: { name: X-K, value_file: crlf } }", "holds a control character"),
        ("{ header: { name: Host, value_file: secret } }", "has a meaning of its own"),
        ("{ header: { name: X-Forwarded-For, value_file: secret } }", "has a meaning of its own"),
        ("{ header: { name: \"X K\", value_file: secret } }", "must be a field name"),
        ("{ header: { name: X-K, value_file: secret, value: x } }", "is not a known key"),
        ("{ client_credentials: { client: nobody } }", "\"nobody\" is not defined under clients"),
        ("{ client_credentials: { client: orphan } }", "clients.orphan names no issuer"),
        ("{ client_credentials: { client: localcaller } }", "has no discovery: give token_endpoint"),
        ("{ client_credentials: { client: caller, scope: \"a\\\\b\" } }", "must be space-separated scope tokens"),
        ("{ client_credentials: { client: caller, token_endpoint: \"ftp://x\" } }", "is not an http(s) URL"),
        ("{ client_credentials: { scope: x } }", "client: is required")
    ])
    func refusedCredentials(_ credentials: String, _ reason: String) {
        let text = problems(config(credentials: credentials))
        #expect(text.contains(reason), "\(credentials): \(text)")
    }

    @Test func theSecretIsNeverQuotedInAProblem() throws {
        try "leaked\u{0}value".write(toFile: "\(dir)/nul", atomically: true, encoding: .utf8)
        let text = problems(config(credentials: "{ header: { name: X-K, value_file: nul } }"))
        #expect(text.contains("control character") && !text.contains("leaked"))
    }

    @Test(arguments: [
        ("auth: bearer\n    issuers: [local]\n    forward_token: true", "the caller's token cannot go too"),
        (
            "auth: bearer\n    issuers: [local]\n    token_exchange: { issuer: as1, client: caller, audience: x }",
            "an exchanged token cannot go too"
        ),
        (
            "auth: dpop\n    issuers: [local]\n    dpop: { forward_proof: true }",
            "a proof for the caller's token cannot go with it"
        )
    ])
    func aTokenRouteCannotSendAnotherAuthorization(_ route: String, _ reason: String) {
        let text = problems(
            config(credentials: #"{ client_credentials: { client: caller, scope: "billing:write" } }"#, route: route))
        #expect(text.contains(reason), "\(route): \(text)")
    }

    @Test func aRouteCannotSetTheCredentialsFieldItself() {
        let text = problems(
            config(
                credentials: "{ header: { name: X-Billing-Key, value_file: secret } }",
                route: "auth: bearer\n    issuers: [local]\n    headers: { X-Billing-Key: sub }"))
        #expect(text.contains("the route sets x-billing-key too"), "\(text)")
    }

    @Test(arguments: [
        ("a-key\n", "a-key"), ("  padded \t\r\n", "padded"), ("in side", "in side"), ("tab\there", "tab\there")
    ])
    func secretBytesBecomeAFieldValue(_ bytes: String, _ value: String) throws {
        #expect(try UpstreamSecretFile.value(Array(bytes.utf8)).get() == value)
    }

    @Test(arguments: ["", " \n", "a\rb", "a\nb", "a\u{0}b", "a\u{7F}b", "a\u{1B}b"])
    func secretBytesAHeaderCannotCarryAreRefused(_ bytes: String) {
        #expect(throws: UpstreamSecretProblem.self) { try UpstreamSecretFile.value(Array(bytes.utf8)).get() }
    }
}
