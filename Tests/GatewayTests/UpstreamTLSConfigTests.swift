import Foundation
import Testing

@testable import Gateway

/// `upstreams.NAME.tls`: defaults, each key, and the misuses check-config explains.
@Suite("Config: HTTPS upstreams")
struct UpstreamTLSConfigTests {
    func parse(_ upstream: String) -> Result<GatewayConfig, ConfigError> {
        let yaml = """
            listen: 127.0.0.1:8080
            upstreams:
              app: \(upstream)
            routes:
              - match: { path_prefix: / }
                upstream: app
                auth: none
            """
        return ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 2)
    }

    func problems(_ upstream: String) -> String {
        if case .failure(let e) = parse(upstream) { return e.problems.map(\.description).joined(separator: "\n") }
        return ""
    }

    @Test func httpsWithoutATLSBlockVerifiesTheURLHostAgainstTheSystemCAs() throws {
        let up = try #require(try parse("{ url: \"https://api.example.com\" }").get().upstreams["app"])
        #expect(up.port == 443)
        #expect(up.tls == UpstreamTLSConfig(serverName: "api.example.com"))
        let context = try #require(up.tlsContext)
        #expect(context.serverName == "api.example.com" && !context.insecureSkipTLSVerify)
        // The default port stays out of the Host header, as :80 does for http.
        #expect(up.authority == "api.example.com")
        #expect(up.endpoint.tls === context)
    }

    @Test func plainHTTPHasNoTLSAndPaysNothingForIt() throws {
        let up = try #require(try parse("{ url: \"http://127.0.0.1:3000\" }").get().upstreams["app"])
        #expect(up.tls == nil && up.tlsContext == nil && up.endpoint.tls == nil)
    }

    @Test func serverNameAndInsecureSkipVerify() throws {
        let up = try #require(
            try parse(
                "{ url: \"https://10.0.0.7:8443\", tls: { server_name: API.Internal, insecure_skip_verify: true } }"
            )
            .get().upstreams["app"])
        #expect(up.tls?.serverName == "api.internal")
        #expect(up.tls?.insecureSkipVerify == true && up.tlsContext?.insecureSkipTLSVerify == true)
        #expect(up.authority == "10.0.0.7:8443")
    }

    @Test func eachConfigLoadBuildsItsOwnContextSoPoolsAreRenewed() throws {
        let a = try #require(try parse("{ url: \"https://api.example.com\" }").get().upstreams["app"])
        let b = try #require(try parse("{ url: \"https://api.example.com\" }").get().upstreams["app"])
        #expect(a.endpoint != b.endpoint)
    }

    @Test func misusesAreExplained() {
        #expect(
            problems("{ url: \"https://a.test\", tls: { ca_file: /nonexistent/ca.pem } }")
                .contains("upstreams.app.tls.ca_file: cannot read /nonexistent/ca.pem"))
        #expect(
            problems("{ url: \"https://a.test\", tls: { key_file: /etc/hostname } }")
                .contains(
                    "upstreams.app.tls: a client certificate needs both cert_file and key_file; add cert_file or remove the other"
                ))
        #expect(
            problems("{ url: \"https://a.test\", tls: { ca_file: /etc/hostname, insecure_skip_verify: true } }")
                .contains(
                    "upstreams.app.tls.insecure_skip_verify: turns certificate verification off, so ca_file would never be used"
                ))
        #expect(
            problems("{ url: \"http://a.test\", tls: { server_name: a.test } }")
                .contains("upstreams.app.tls: applies only to an https:// url; make the url https://a.test:80"))
        #expect(
            problems("{ url: \"https://a.test\", tls: { server_name: \"a..test\" } }")
                .contains("upstreams.app.tls.server_name: \"a..test\" is not a host name or IP address"))
        #expect(
            problems("{ url: \"https://a.test\", tls: { verify: false } }").contains(
                "upstreams.app.tls.verify: is not a known key"))
        // Readable, but not PEM: OpenSSL's refusal, at the block's path.
        #expect(
            problems("{ url: \"https://a.test\", tls: { ca_file: /etc/hostname } }").contains(
                "upstreams.app.tls: cannot load ca_file"))
    }
}
