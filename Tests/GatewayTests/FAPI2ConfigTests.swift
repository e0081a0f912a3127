import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway

/// `profile: fapi2` in check-config: a conforming config passes and is narrowed to the
/// profile's algorithms; each thing FAPI 2.0 forbids is refused with its clause.
@Suite("Config: profile: fapi2 on clients and issuers")
struct FAPI2ConfigTests {
    static let keyFile: String = {
        let path = NSTemporaryDirectory() + "tg-fapi2-config-\(getpid()).jwk"
        let key =
            #"{"kty":"EC","crv":"P-256","kid":"k1","x":"WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis","y":"y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE","d":"Hndv7ZZjs_ke8o9zXYo3iq-Yr8SewI5vrqd0pAvEPqg"}"#
        _ = FileManager.default.createFile(atPath: path, contents: Data(key.utf8))
        return path
    }()

    /// A conforming config; `client`, `issuer` and `route` add keys to those entries.
    func yaml(client: String = "", issuer: String = "", route: String = "") -> String {
        """
        public_url: https://bank.example.com
        session: { keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="] }
        issuers:
          bank: { issuer: "https://as.bank.example", discovery: true, audiences: [accounts], profile: fapi2\(issuer) }
        clients:
          web:
            issuer: bank
            client_id: web-app
            auth: private_key_jwt
            key_file: \(Self.keyFile)
            dpop: true
            profile: fapi2\(client)
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - { match: { path_prefix: /accounts/ }, upstream: a, auth: bearer, issuers: [bank]\(route) }
          - { match: { path_prefix: / }, upstream: a, auth: login, client: web, forward_token: true }
        """
    }

    func parse(_ text: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: text, environment: [:], baseDirectory: "/etc/tg", cores: 2)
    }

    func problems(_ text: String) -> String {
        if case .failure(let e) = parse(text) { return e.description }
        return ""
    }

    @Test func aConformingConfigPassesNarrowedToTheProfilesAlgorithms() throws {
        let cfg = try parse(yaml()).get()
        #expect(cfg.issuers["bank"]?.algorithms == [.PS256, .ES256, .EdDSA])
        #expect(cfg.issuers["bank"]?.profile == .fapi2 && cfg.clients["web"]?.profile == .fapi2)
        #expect(cfg.routes[0].options.auth.tokenRoute?.boundOnlyIssuers == ["bank"])
    }

    @Test(arguments: [
        (
            "\n    request_mode: request", "", "",
            "clients.web.request_mode: must be par with profile: fapi2 (FAPI 2.0 Security Profile §5.3.3.2 item 2"
        ),
        ("\n    request_mode: plain", "", "", "must be par"),
        (
            "\n    assertion_audience: endpoint", "", "",
            "clients.web.assertion_audience: must be issuer with profile: fapi2"
        ),
        ("", ", algorithms: [ES256, RS256]", "", "issuers.bank.algorithms: RS256 is not allowed with profile: fapi2"),
        ("", ", algorithms: [PS256, HS256]", "", "HS256 is not allowed with profile: fapi2"),
        ("", "", ", token_in_query: true", "routes[0].token_in_query: is not allowed with issuers of profile: fapi2"),
        ("", "", ", token_in_body: true", "routes[0].token_in_body: is not allowed with issuers of profile: fapi2")
    ])
    func refused(client: String, issuer: String, route: String, expected: String) {
        let text = yaml(client: client, issuer: issuer, route: route)
        #expect(problems(text).contains(expected), "\(problems(text))")
    }

    @Test func unboundLoginTokensAndUnknownProfilesAreRefused() {
        let unbound = yaml().replacingOccurrences(of: "dpop: true", with: "dpop: false")
        #expect(problems(unbound).contains("clients.web.dpop: must be true with profile: fapi2"))
        let unknown = yaml().replacingOccurrences(of: "    profile: fapi2", with: "    profile: fapi1")
        #expect(problems(unknown).contains("clients.web.profile: must be fapi2"))
    }

    @Test func anRSAKeyMayOnlySignPS256() throws {
        let path = NSTemporaryDirectory() + "tg-fapi2-rsa-\(getpid()).jwk"
        var jwk = try JWK.generate(for: .PS256, kid: "r1").privateJWK()
        jwk["alg"] = nil  // an RSA key for either algorithm; `alg:` chooses
        _ = FileManager.default.createFile(atPath: path, contents: Data(JSONSerializer.serialize(.object(jwk)).utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rsa = yaml().replacingOccurrences(of: "key_file: \(Self.keyFile)", with: "key_file: \(path)")
        let rs256 = rsa.replacingOccurrences(of: "    profile: fapi2\n", with: "    profile: fapi2\n    alg: RS256\n")
        #expect(problems(rs256).contains("RS256 is not allowed with profile: fapi2"), "\(problems(rs256))")
        let ps256 = rsa.replacingOccurrences(of: "    profile: fapi2\n", with: "    profile: fapi2\n    alg: PS256\n")
        #expect(problems(ps256).isEmpty, "\(problems(ps256))")
    }

    @Test func introspectionIsSignedUnderTheProfile() throws {
        let on = yaml(issuer: ", introspection: { client: web }")
        #expect(try parse(on).get().issuers["bank"]?.introspection?.signed == true)
        let off = yaml(issuer: ", introspection: { client: web, signed: false }")
        #expect(
            problems(off).contains(
                "issuers.bank.introspection.signed: must be true with profile: fapi2 (FAPI 2.0 Message Signing §5.5.2"
            ),
            "\(problems(off))")
    }

    @Test func aSharedSecretIsRefused() {
        let text = yaml().replacingOccurrences(
            of: "auth: private_key_jwt\n    key_file: \(Self.keyFile)", with: "auth: client_secret_basic\n    secret: s"
        )
        #expect(
            problems(text).contains(
                "clients.web.auth: must be private_key_jwt, tls_client_auth or self_signed_tls_client_auth with profile: fapi2"
            ))
    }

    @Test func anIssuerOutsideTheProfileIsNamedForTheClient() {
        let text = yaml().replacingOccurrences(of: ", profile: fapi2 }", with: " }")
        #expect(
            problems(text).contains(
                "issuers.bank allows RS256: with profile: fapi2 ID tokens are PS256, ES256 or EdDSA"))
    }

    @Test func anUnboundTokenOfTheProfilesIssuerIsRefusedAndABoundOnePasses() throws {
        // The decision-mode gateway of CertificateBindingTests, its issuer held to the profile
        // and its route taking either scheme.
        let text = CertificateBindingTests.yaml
            .replacingOccurrences(of: "audiences: [api] }", with: "audiences: [api], profile: fapi2 }")
            .replacingOccurrences(of: "auth: bearer", with: "auth: token")
        #expect(text.contains("profile: fapi2") && text.contains("auth: token"))
        let worker = try testWorker(text)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: worker)
        let unbound = askForwardAuth(
            worker, "/api/x",
            [("Authorization", "Bearer \(try testAccessToken(key: key, now: SystemClock().seconds))")])
        #expect(unbound.status == 401)
        #expect(unbound.bodyText.contains("must be sender-constrained"), "\(unbound.bodyText)")
        // A DPoP-bound token with its proof passes (the profile is about binding, not schemes).
        let signer = try DPoPProofSigner(key: try JWK.generate(for: .ES256, kid: "p"), alg: .ES256)
        let bound = try testAccessToken(
            key: key, now: SystemClock().seconds, extra: ["cnf": .object(JSONObject(["jkt": .string(signer.jkt)]))])
        let proof = try signer.proof(
            method: "GET", url: "https://api.example/api/x", accessToken: bound, now: SystemClock().seconds)
        let t = askForwardAuth(worker, "/api/x", [("Authorization", "DPoP \(bound)"), ("DPoP", proof)])
        #expect(t.status == 200, "\(t.bodyText)")
    }
}
