import Reactor
import Testing

@testable import Gateway

@Suite("Config: a listener's tls (profile, certificates, watch)")
struct ListenerTLSConfigTests {
    func parse(_ tls: String) -> Result<GatewayConfig, ConfigError> {
        ConfigParser.parse(
            yaml: """
                listen: { address: 127.0.0.1:8443, tls: \(tls) }
                upstreams: { app: { url: http://127.0.0.1:3000 } }
                routes: [ { match: { path_prefix: / }, upstream: app, auth: none } ]
                """, environment: [:], baseDirectory: ".", cores: 2)
    }

    func problems(_ tls: String) -> [String] {
        if case .failure(let e) = parse(tls) { return e.problems.map(\.description) }
        return []
    }

    @Test func oneCertificateIsTheIntermediateProfileWatchedEveryFiveSeconds() throws {
        let tls = try #require(try parse("{ cert_file: c.pem, key_file: k.pem }").get().listeners.first?.tls)
        #expect(tls.profile == .intermediate)
        #expect(tls.certificates == [TLSCertificateFiles(certFile: "c.pem", keyFile: "k.pem")])
        #expect(tls.watchInterval == 5)
    }

    @Test func severalCertificatesAProfileAndWatch() throws {
        let tls = try #require(
            try parse(
                "{ profile: modern, watch: off, certificates: [ { cert_file: a.pem, key_file: a.key }, { cert_file: b.pem, key_file: b.key } ] }"
            ).get().listeners.first?.tls)
        #expect(tls.profile == .modern)
        #expect(tls.certificates.map(\.certFile) == ["a.pem", "b.pem"])
        #expect(tls.watchInterval == nil)
    }

    @Test func customListsAreKept() throws {
        let tls = try #require(
            try parse(
                "{ cert_file: c, key_file: k, profile: custom, ciphers: ECDHE-ECDSA-AES256-GCM-SHA384, ciphersuites: TLS_AES_256_GCM_SHA384, curves: P-384 }"
            ).get().listeners.first?.tls)
        #expect(
            tls.profile
                == .custom(
                    ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384", ciphersuites: "TLS_AES_256_GCM_SHA384", curves: "P-384"))
    }

    @Test func clientCertificatesAreOptionalUnlessRequired() throws {
        let optional = try #require(
            try parse("{ cert_file: c, key_file: k, client_ca_file: ca.pem }").get().listeners.first?.tls)
        #expect(optional.clients == ClientCertificates(caFile: "ca.pem", crlFile: nil, required: false))
        let required = try #require(
            try parse(
                "{ cert_file: c, key_file: k, client_ca_file: ca.pem, client_certificate: required, client_crl_file: r.pem }"
            ).get().listeners.first?.tls)
        #expect(required.clients == ClientCertificates(caFile: "ca.pem", crlFile: "r.pem", required: true))
        #expect(try parse("{ cert_file: c, key_file: k }").get().listeners.first?.tls?.clients == nil)
    }

    @Test(arguments: [
        ("{ cert_file: c }", "listen.tls: needs both cert_file and key_file"),
        (
            "{ cert_file: c, key_file: k, client_certificate: required }",
            "listen.tls.client_certificate: needs client_ca_file"
        ),
        ("{ cert_file: c, key_file: k, client_crl_file: r.pem }", "listen.tls.client_crl_file: needs client_ca_file"),
        (
            "{ cert_file: c, key_file: k, client_ca_file: ca, client_certificate: yes }",
            "listen.tls.client_certificate: must be optional or required"
        ),
        ("{ cert_file: c, key_file: k, certificates: [ { cert_file: a, key_file: b } ] }", "not both"),
        ("{ certificates: [] }", "listen.tls.certificates: needs at least one"),
        ("{ certificates: [ { cert_file: a, key: b } ] }", "listen.tls.certificates[0].key: is not a known key"),
        ("{ cert_file: c, key_file: k, profile: old }", "listen.tls.profile: must be intermediate, modern or custom"),
        ("{ cert_file: c, key_file: k, ciphers: ALL }", "listen.tls.ciphers: is taken only with profile: custom"),
        ("{ cert_file: c, key_file: k, profile: custom, ciphers: NOPE }", "ciphers: no TLS 1.2 suite OpenSSL knows"),
        (
            "{ cert_file: c, key_file: k, profile: custom, ciphers: aNULL }",
            "no TLS 1.2 suite left that an RSA or ECDSA certificate can serve"
        ),
        ("{ cert_file: c, key_file: k, profile: custom, ciphers: '', ciphersuites: '' }", "no suite is left"),
        ("{ cert_file: c, key_file: k, profile: custom, ciphersuites: TLS_NOPE }", "ciphersuites: a TLS 1.3 suite"),
        ("{ cert_file: c, key_file: k, profile: custom, curves: P-999 }", "curves: a group OpenSSL does not know"),
        ("{ cert_file: c, key_file: k, watch: 0s }", "listen.tls.watch: must be from 1s to 1h, or off")
    ])
    func refused(tls: String, expected: String) {
        let p = problems(tls)
        #expect(p.contains { $0.contains(expected) }, "\(p)")
    }
}
