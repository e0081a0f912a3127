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
            "issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    profile: google-risc\n    delivery: poll",
            "push only"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    profile: apple",
            "must be ssf or google-risc"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    auth: { service_account_file: token }",
            "is not a JSON object"
        ),
        (
            "issuer: https://idp.example.com\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/e\n    auth: { service_account_file: token, bearer_file: token }",
            "give one of bearer_file, client and service_account_file"
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

    /// A service account's key for the tests only (RSA 2048, made for this file).
    static let serviceAccountPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDH1QEmkmeequkT
        HHxQ6iLkpYoKKUWxZGteaSImYzhAPl9bPqjISOykLHg94kJssh4n3Z0t1DYc27g4
        wVgHrMGB1ob56aFJ/Xb56ydWotP7Pp4FTXWFKnqrN89LeNX8GcgPTau+Y5fVqxNi
        aqlnaK9ZUwwjtrIBDXc+XohP2Hsh2NyKd2OwdCUH7FtmcHpxKOV66VqQcQNAd+UI
        RIGMaFx/TBO2HUQ9lEnX7vZufWa851PVf8NCzt78oKg4y3JVXGsETdGsLMIKuell
        mzqa+Kjx2kh5+K+fl46qgtJR30sxiiKYYJry6zp3Yy3WqM9TE2H5QZUsxcg1/YEl
        Iwb/nIcbAgMBAAECggEAMmgxG503pScAlxEK7NA60AlP2kNR8K7fhJephRxnHpF9
        NUOHiMoYY0tSY23VCp0djTnSQbKzmbD09eATiBAUWd+W+ahsxoC4x88BA9Ib/dbs
        PnMtD1PJULJJyIRpGegY9n9FsMdnj/7Q63TzWYHnJXWU7NdTbH+Mkj9/TADUApPC
        3nEnh14jZPLQorgvWwBsVG1hZsJgaJJiRMLpumAjsjCDVq8jLpIvBDi3BQCVJQ5q
        LM0bwXbBwguqP/oP3kdJbiiiwOcwySZ/jN0xFk2nTA8mbNsW+mEnMkb7OayD3xMV
        gLKWPz6vL/jeQZIgcEw9kzX9MoGW8ElYlSHST/UFmQKBgQDngamAwVwNNLyd8lxH
        x4OXRmKCF5hC96gqMqYLJrW6+GA2IAGjexcoi3zDyvm/Q7KDejZrqTaEf0akqhg4
        Q2NjvaB3UxmClCD0OLtiG3TOtkhhdxAO6fxZncmlrat9MFzc0eKI7IFdsVQIQumW
        kaxeSEcqQP3MGuheV4ZwqlP8KQKBgQDc+XEyqz3N3Uua5ZVSxOden0nzf/8pF3hH
        BfJbF3lxC1fWoVnP+tPTJPJObJvJRMNwuNSeYiwJPWW3Z6P/yPC5k/b3C8edBZw4
        2XUgpUHn0WjH2LXSdw7WQXjkxzQs9/Sz17IQasrLpOlR1/h0z0xF1L29IlMhoxSQ
        pI2ZGcpRowKBgGQtSHLNuQ6B3oieYm4xGHEyZNgUa6+2yQ8RgaZbptH0PnXNXcgn
        MHs7+M4km/O20J1yGfB2dX/aL3B7piVai7ySRsi7rdNCVAw6LGOkq+PzHtkGE23Q
        tID29VX7E7UFY3muXM+RP92SKWG1yqx79tGJhznyi6BxmFGSoDtKiTMZAoGAYeis
        PVUeh06cJz++T/QqyAQwEhIOjrh1dJKv9aiLCImMG+9WCg8LOCzQp+r7g8xSBGoA
        20SIWne3z/G9+qGf97oV3RR9F5faxl2jxhkzAHIKyTG+LkjObCSKWmPhPGOJKv5R
        SXDn9h9VugvFbIxFMVO31kuVJfxKKmSe0M1alZ0CgYEA5EB87kAAQzDf1PuRUjvm
        D13Zqg+So+kks42wwj5cXLcLvOEeT2Dr+lcAWbCvhxzuMTWe6DfAmnyzVxz88Uor
        DkAdHiWoyMoo7XBmWTKYgx10T5EQifion1zhhic1v1nFyPQAUBqbX9MibhhozY0s
        s7gGZY/NY+t/vCng9MpsNlw=
        -----END PRIVATE KEY-----
        """

    @Test func googlesProfileTakesItsIssuerAndTheAppsClientIDs() throws {
        let pem = Self.serviceAccountPEM
        let key = try JWK(pem: pem, kid: "k1")
        let file = JSONObject([
            "client_email": .string("risc@p.iam.gserviceaccount.com"), "private_key_id": .string("k1"),
            "private_key": .string(pem)
        ])
        try JSONSerializer.serialize(.object(file)).write(toFile: "\(dir)/sa.json", atomically: true, encoding: .utf8)
        let cfg = try parse(
            config(
                "profile: google-risc\n    issuers: [corp]\n    endpoint_url: https://gw.example.com/risc\n    auth: { service_account_file: sa.json }"
            ).replacingOccurrences(of: "audiences: [api]", with: "audiences: [app-1, app-2]")
        ).get()
        let t = try #require(cfg.sharedSignals["tx"])
        #expect(t.issuer == "https://accounts.google.com" && t.audiences == ["app-1", "app-2"])
        // Google's subjects name the issuer with a trailing slash: both spellings are the entry's.
        #expect(t.issuerNames["https://idp.example.com/"] == ["corp"])
        #expect(t.eventURIs.contains("https://schemas.openid.net/secevent/risc/event-type/sessions-revoked"))
        #expect(!t.eventURIs.contains { $0.contains("caep") })
        guard case .serviceAccount(let account) = t.auth else {
            Issue.record("no service account")
            return
        }
        // The management token: signed with the account's key, for Google's RISC service, an hour.
        let token = try #require(account.token(now: 1_700_000_000))
        let jws = try CompactJWS(token, maxSize: 8192)
        try JWSVerifier(keys: JWKSet(keys: [try JWK(object: key.publicJWK())]), algorithms: [.RS256]).verify(jws)
        let claims = try jws.claims()
        #expect(claims["iss"]?.string == "risc@p.iam.gserviceaccount.com" && claims["sub"] == claims["iss"])
        #expect(claims["aud"]?.string == TransmitterConfig.Profile.googleManagementAudience)
        #expect(claims["exp"]?.int64 == 1_700_003_600 && jws.header.kid == "k1")
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
