import Foundation
import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// `shared_signals:` as check-config reads it, the transmitter's metadata as the stream client
/// reads it, and the push credential every replica derives alike.
@Suite("Shared Signals: config, metadata and the push credential")
struct SharedSignalsConfigTests {
    let dir: String
    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("ssfcfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "management-token\n".write(toFile: "\(dir)/token", atomically: true, encoding: .utf8)
    }

    func parse(_ yaml: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: dir, cores: 2)
    }

    func problems(_ yaml: String) -> String {
        if case .failure(let e) = parse(yaml) { return e.description }
        return ""
    }

    func config(_ transmitter: String, route: String = "{ match: { path_prefix: / }, upstream: a, auth: none }")
        -> String
    {
        """
        issuers:
          corp: { issuer: "https://idp.example.com", jwks_file: /dev/null, audiences: [api] }
        clients:
          rx: { issuer: corp, client_id: rx, auth: client_secret_basic, secret: "0123456789abcdef0123456789" }
        shared_signals:
          tx:
            \(transmitter)
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - \(route)
        """
    }

    static let minimal = """
        issuer: https://idp.example.com/tenant
            issuers: [corp]
            endpoint_url: https://gw.example.com/.ssf/events
        """

    @Test func aTransmitterWithItsDefaults() throws {
        let cfg = try parse(config(Self.minimal + "\n    auth: { bearer_file: token }")).get()
        let t = try #require(cfg.sharedSignals["tx"])
        #expect(t.issuer == "https://idp.example.com/tenant" && t.issuers == ["corp"])
        #expect(t.issuerURLs == ["https://idp.example.com"])
        #expect(t.endpointPath == "/.ssf/events" && t.audience == "https://gw.example.com")
        #expect(t.revocationTTL == 86_400 && t.events.count == 7)
        guard case .bearerFile(let path) = t.auth else {
            Issue.record("no bearer_file")
            return
        }
        #expect(path == "\(dir)/token")
        #expect(
            t.eventURIs.first == "https://schemas.openid.net/secevent/caep/event-type/session-revoked"
                && t.eventURIs.count == 7)
    }

    @Test(arguments: [
        ("issuers: [corp]\n    endpoint_url: https://gw.example.com/e", "issuer: is required"),
        ("issuer: https://idp.example.com\n    endpoint_url: https://gw.example.com/e", "issuers: is required"),
        ("issuer: https://idp.example.com\n    issuers: [corp]", "endpoint_url: is required for push"),
        (
            "issuer: http://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e",
            "is not an https URL"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [nope]\n    endpoint_url: https://gw.example.com/e",
            "\"nope\" is not defined"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com",
            "with a path"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    delivery: poll",
            "endpoint_url: goes with delivery: push"
        ),
        ("issuer: https://idp.example.com\n    issuers: [corp]\n    delivery: poll", "audience: is required for poll"),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    delivery: poll\n    audience: a\n    poll_interval: 50ms",
            "at least 100ms"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    poll_interval: 1s",
            "goes with delivery: poll"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    delivery: carrier-pigeon",
            "must be push or poll"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    profile: google-risc",
            "not available yet"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    events: [session-revoked, telepathy]",
            "\"telepathy\" is not an event"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    revocation_ttl: 10s",
            "at least 1m"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    auth: { bearer_file: nowhere }",
            "cannot read"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    auth: { bearer_file: token, client: rx }",
            "not both"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    auth: { client: nobody }",
            "\"nobody\" is not defined under clients"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    auth: { bearer_file: token, scope: x }",
            "goes with client"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/oauth2/start",
            "is login.start_path's too"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    colour: blue",
            "is not a known key"
        )
    ])
    func refusedTransmitters(_ transmitter: String, _ reason: String) {
        let text = problems(config(transmitter))
        #expect(text.contains(reason), "\(transmitter): \(text)")
    }

    @Test func aPollTransmitterNeedsItsAudienceAndNoPath() throws {
        let cfg = try parse(
            config(
                "issuer: https://idp.example.com\n    issuers: [corp]\n    delivery: poll\n    audience: https://gw.example.com\n    poll_interval: 250ms"
            )
        ).get()
        let t = try #require(cfg.sharedSignals["tx"])
        #expect(t.delivery == .poll && t.pollInterval == 0.25 && t.endpointPath.isEmpty)
        #expect(t.audience == "https://gw.example.com" && t.delivery.method == "urn:ietf:rfc:8936")
    }

    @Test func aPushPathAnExactRouteHasIsRefused() {
        let text = problems(
            config(Self.minimal, route: "{ match: { path: /.ssf/events }, upstream: a, auth: none }"))
        #expect(text.contains("is routes[0]'s too"), "\(text)")
    }

    @Test func aRevocationShorterThanSessionsIsWarnedAbout() throws {
        let cfg = try parse(config(Self.minimal + "\n    revocation_ttl: 1h")).get()
        #expect(cfg.warnings.contains { $0.path == "shared_signals.tx.revocation_ttl" })
    }

    @Test func theMetadataIsFoundBeforeTheIssuersPath() {
        #expect(
            TransmitterStream.metadataURL(issuer: "https://idp.example.com/tenant/x")
                == "https://idp.example.com/.well-known/ssf-configuration/tenant/x")
        #expect(
            TransmitterStream.metadataURL(issuer: "http://127.0.0.1:9000")
                == "http://127.0.0.1:9000/.well-known/ssf-configuration")
    }

    func metadata(_ json: String, status: Int = 200) -> Result<TransmitterMetadata, TransmitterMetadata.MetadataError> {
        TransmitterMetadata.parse(
            FetchResponse(status: status, headers: [], body: Array(json.utf8)), issuer: "https://tx.example")
    }

    @Test func theMetadataMustBeTheTransmittersAndOfferPush() throws {
        let good = #"""
            {"issuer":"https://tx.example","jwks_uri":"https://tx.example/jwks",
             "configuration_endpoint":"https://tx.example/stream","verification_endpoint":"https://tx.example/verify",
             "delivery_methods_supported":["urn:ietf:rfc:8935","urn:ietf:rfc:8936"]}
            """#
        let m = try metadata(good).get()
        #expect(m.jwksURI == "https://tx.example/jwks" && m.verificationEndpoint == "https://tx.example/verify")
        for (bad, why) in [
            (
                good.replacingOccurrences(of: #""issuer":"https://tx.example""#, with: #""issuer":"https://evil""#),
                "issuer"
            ),
            (good.replacingOccurrences(of: "https://tx.example/jwks", with: "http://tx.example/jwks"), "jwks_uri"),
            (good.replacingOccurrences(of: #""urn:ietf:rfc:8935","#, with: ""), "push"),
            (good.replacingOccurrences(of: #""configuration_endpoint""#, with: #""other""#), "configuration_endpoint"),
            ("[]", "JSON object")
        ] {
            guard case .failure(let e) = metadata(bad) else {
                Issue.record("accepted: \(bad)")
                continue
            }
            #expect(e.description.contains(why), "\(e.description)")
        }
        #expect(throws: TransmitterMetadata.MetadataError.self) { try metadata(good, status: 404).get() }
        // Poll delivery needs the transmitter to offer it.
        let pushOnly = good.replacingOccurrences(of: #","urn:ietf:rfc:8936""#, with: "")
        let response = FetchResponse(status: 200, headers: [], body: Array(pushOnly.utf8))
        guard case .failure(let e) = TransmitterMetadata.parse(response, issuer: "https://tx.example", delivery: .poll)
        else {
            Issue.record("poll accepted without urn:ietf:rfc:8936")
            return
        }
        #expect(e.description.contains("poll delivery"))
        #expect(
            (try? TransmitterMetadata.parse(response, issuer: "https://tx.example", delivery: .push).get()) != nil)
    }

    @Test func everyReplicaDerivesTheSamePushCredentialAndOnlyFromItsKeys() throws {
        let a = try parse(
            config(Self.minimal) + "\nsession: { keys: [\"q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE=\"] }"
        ).get()
        let b = try parse(
            config(Self.minimal) + "\nsession: { keys: [\"q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE=\"] }"
        ).get()
        let other = try parse(
            config(Self.minimal) + "\nsession: { keys: [\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"] }"
        ).get()
        func credential(_ cfg: GatewayConfig) throws -> String {
            SharedSignalsHub.pushAuthorization(
                try #require(cfg.sharedSignals["tx"]), secret: SharedSignalsService.pushSecret(cfg))
        }
        #expect(try credential(a) == credential(b))
        #expect(try credential(a) != credential(other))
        #expect(try credential(a).hasPrefix("Bearer ") && !credential(a).contains("q2GrNq1J"))
    }
}
