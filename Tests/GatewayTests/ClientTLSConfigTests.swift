import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway

/// `clients.NAME.tls` and the mutual-TLS client authentications (RFC 8705 §2): the files are
/// read at check-config, a self-signed certificate is published with x5c, and the FAPI 2.0
/// profile takes mutual TLS for authentication and for binding.
@Suite("Config: a client's certificate towards the AS (RFC 8705)")
struct ClientTLSConfigTests {
    /// A self-signed P-256 certificate and its key (test data, made with `openssl req -x509`).
    static let certificate = """
        -----BEGIN CERTIFICATE-----
        MIIBljCCAT2gAwIBAgIUYv7dHMlgtq89W6iASrBghxz0xqkwCgYIKoZIzj0EAwIw
        IDEeMBwGA1UEAwwVdG9rZW5nYXRlLXRlc3QtY2xpZW50MCAXDTI2MTEyNzAzNDEw
        M1oYDzIxMjYxMTAzMDM0MTAzWjAgMR4wHAYDVQQDDBV0b2tlbmdhdGUtdGVzdC1j
        bGllbnQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATYPATvJxipuTCCjeA92J0L
        cabcR5rDgYmWKGZqOm+IYb7XhjAjoQqOmK4HMPnyBQjFP/KAnMg8XOsGTrMlrcHW
        o1MwUTAdBgNVHQ4EFgQU/W9JrZEXCtuQ5hXjrHoB/E39RSkwHwYDVR0jBBgwFoAU
        /W9JrZEXCtuQ5hXjrHoB/E39RSkwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD
        AgNHADBEAiAjSE2wUhdTL0OBhII1LuRKALKfRzqgFWVjECBuhxK6ZAIgQZ48EB7j
        OUu+niTQAeCVc4l0bqZTlSkv6h0PfogpOJ8=
        -----END CERTIFICATE-----

        """
    static let key = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgfiLBdB9T7eEZL7aR
        vp07GyaZ1r2sQsfctVWzPlKo3V6hRANCAATYPATvJxipuTCCjeA92J0LcabcR5rD
        gYmWKGZqOm+IYb7XhjAjoQqOmK4HMPnyBQjFP/KAnMg8XOsGTrMlrcHW
        -----END PRIVATE KEY-----

        """
    /// Another P-256 key: not the certificate's.
    static let otherKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgMQTg7KZ8eubdx/bU
        +u8aONMsT+Yn0FZYfTTiudSeYb+hRANCAAS9DnhXgveO+YukxKdRri1/07zQUYoh
        1VCIeaHSgk5kfkDd1/CDwn/PbvHDcmFxjlgYkKwJXcxRT9inhLZ43+/J
        -----END PRIVATE KEY-----

        """
    /// base64url(SHA-256(DER)) of `certificate`, computed with `openssl x509 -outform der | openssl dgst`.
    static let thumbprint = "3VOvEVCPZP3Logkbb1rNy47idje3kw6XX2hhHc2IKAg"

    static let directory: String = {
        let dir = NSTemporaryDirectory() + "tg-client-tls-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/client.crt", contents: Data(certificate.utf8))
        _ = FileManager.default.createFile(atPath: dir + "/client.key", contents: Data(key.utf8))
        _ = FileManager.default.createFile(atPath: dir + "/empty.crt", contents: Data("nothing".utf8))
        _ = FileManager.default.createFile(atPath: dir + "/other.key", contents: Data(otherKey.utf8))
        return dir
    }()

    func yaml(auth: String, tls: String? = "{ cert_file: client.crt, key_file: client.key }", extra: String = "")
        -> String
    {
        """
        issuers:
          bank: { issuer: "https://as.bank.example", discovery: true, audiences: [accounts], profile: fapi2 }
        clients:
          web:
            issuer: bank
            client_id: web-app
            auth: \(auth)\(tls.map { "\n    tls: \($0)" } ?? "")\(extra)
        upstreams: { a: { url: "http://127.0.0.1:1" } }
        routes:
          - { match: { path_prefix: / }, upstream: a, auth: bearer, issuers: [bank] }
        """
    }

    func parse(_ text: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(yaml: text, environment: [:], baseDirectory: Self.directory, cores: 2)
    }

    func problems(_ text: String) -> String {
        if case .failure(let e) = parse(text) { return e.description }
        return ""
    }

    @Test func tlsClientAuthPresentsTheFilesAndPublishesNothing() throws {
        let client = try #require(try parse(yaml(auth: "tls_client_auth")).get().clients["web"])
        guard case .tlsClientAuth(let id) = client.authentication else {
            Issue.record("auth: tls_client_auth parsed as \(client.authentication)")
            return
        }
        #expect(id == "web-app")
        #expect(client.tls?.certFile == Self.directory + "/client.crt")
        #expect(client.tls?.keyFile == Self.directory + "/client.key")
        #expect(client.tls?.publishedJWK == nil)
        let creds = try client.authentication.credentials(audience: "x", now: 0)
        #expect(creds.headers.isEmpty && creds.form.map(\.0) == ["client_id"] && creds.form[0].1 == "web-app")
    }

    @Test func aSelfSignedCertificateIsPublishedWithX5c() throws {
        let client = try #require(try parse(yaml(auth: "self_signed_tls_client_auth")).get().clients["web"])
        let jwk = try #require(client.tls?.publishedJWK)
        #expect(jwk["kty"]?.string == "EC" && jwk["crv"]?.string == "P-256" && jwk["d"] == nil)
        #expect(jwk["kid"]?.string == "tls-" + Self.thumbprint)
        let x5c = try #require(jwk["x5c"]?.array?.first?.string)
        let der = try #require(Base64.decodeStandard(x5c))
        #expect(Base64URL.encode(Digest.sha256.hash(der)) == Self.thumbprint)
    }

    @Test func aCertificateBindsTokensUnderTheProfileWithoutDPoP() {
        #expect(problems(yaml(auth: "tls_client_auth", extra: "\n    profile: fapi2")) == "")
        let unbound = yaml(auth: "tls_client_auth", tls: nil, extra: "\n    profile: fapi2")
        #expect(problems(unbound).contains("tls_client_auth needs tls: { cert_file, key_file }"))
    }

    @Test(
        arguments: [
            ("tls_client_auth", nil, "clients.web: tls_client_auth needs tls: { cert_file, key_file }"),
            ("tls_client_auth", "{ cert_file: client.crt }", "clients.web.tls: needs both cert_file and key_file"),
            (
                "tls_client_auth", "{ cert_file: missing.crt, key_file: client.key }",
                "clients.web.tls.cert_file: cannot read"
            ),
            ("tls_client_auth", "{ cert_file: empty.crt, key_file: client.key }", "holds no PEM certificate"),
            ("tls_client_auth", "{ cert_file: client.crt, key_file: client.crt }", "cannot load key_file"),
            ("tls_client_auth", "{ cert_file: client.crt, key_file: other.key }", "does not match cert_file"),
            ("tls_client_auth", "{ cert: client.crt }", "clients.web.tls.cert: is not a known key"),
            ("mtls", "{ cert_file: client.crt, key_file: client.key }", "self_signed_tls_client_auth")
        ] as [(String, String?, String)])
    func refused(auth: String, tls: String?, expected: String) {
        let text = yaml(auth: auth, tls: tls)
        #expect(problems(text).contains(expected), "\(problems(text))")
    }

    @Test func mutualTLSAliasesReplaceOnlyTheEndpointsTheyName() throws {
        let body = #"""
            {"issuer":"https://as","token_endpoint":"https://as/token","userinfo_endpoint":"https://as/userinfo",
             "pushed_authorization_request_endpoint":"https://as/par",
             "mtls_endpoint_aliases":{"token_endpoint":"https://mtls.as/token","pushed_authorization_request_endpoint":"https://mtls.as/par"}}
            """#
        let m = try ProviderMetadata.parse(Array(body.utf8), expectedIssuer: "https://as")
        #expect(m.tokenEndpoint == "https://as/token")
        let a = m.usingMTLSAliases()
        #expect(
            a.tokenEndpoint == "https://mtls.as/token" && a.pushedAuthorizationRequestEndpoint == "https://mtls.as/par")
        #expect(a.userinfoEndpoint == "https://as/userinfo")
        // An alias that is not an https URL with a host is left out, and named; the rest stays.
        let bad = #"""
            {"issuer":"http://as","token_endpoint":"http://as/token","mtls_endpoint_aliases":{"token_endpoint":"http://as/token",
             "userinfo_endpoint":"https://evil@as/u","revocation_endpoint":"https://","introspection_endpoint":"https://mtls.as/i"}}
            """#
        let b = try ProviderMetadata.parse(Array(bad.utf8), expectedIssuer: "http://as")
        #expect(b.mtlsEndpointAliases == ["introspection_endpoint": "https://mtls.as/i"])
        #expect(Set(b.refusedMTLSAliases) == ["token_endpoint", "userinfo_endpoint", "revocation_endpoint"])
        #expect(b.usingMTLSAliases().tokenEndpoint == "http://as/token")
        let notObject = #"{"issuer":"http://as","mtls_endpoint_aliases":"https://x"}"#
        #expect(
            try ProviderMetadata.parse(Array(notObject.utf8), expectedIssuer: "http://as").refusedMTLSAliases.count == 1
        )
    }
}
