import JOSE
import Testing

@testable import Gateway
@testable import Reactor

/// Certificate-bound tokens (RFC 8705 §3) seen from the decision endpoints: the connection
/// there is the ingress's, so a token bound to a certificate is refused even when the ingress
/// itself presented that very certificate; unbound tokens and tokens bound to an unknown kind
/// of key keep their rules.
@Suite("Certificate-bound tokens in decision mode")
struct CertificateBindingTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        public_url: https://api.example
        decision: {}
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
        """

    static let ingressCertificate = ClientCertificate(
        sha256: [UInt8](repeating: 9, count: 32), subject: "CN=ingress", uris: [])

    func ask(_ claims: KeyValuePairs<String, JSONValue>) throws -> InMemoryTransport {
        let worker = try testWorker(Self.yaml)
        let key = try JWK.generate(for: .ES256, kid: "k1")
        try publishIssuerKey(key, on: worker)
        let token = try testAccessToken(key: key, now: SystemClock().seconds, extra: claims)
        let ingress = ClientConnection(peer: "10.1.2.3", certificate: Self.ingressCertificate)
        return askForwardAuth(worker, "/api/x", [("Authorization", "Bearer \(token)")], connection: ingress)
    }

    @Test func aTokenBoundToTheIngresssOwnCertificateIsRefused() throws {
        let cnf = JSONObject(["x5t#S256": .string(Base64URL.encode(Self.ingressCertificate.sha256))])
        let t = try ask(["cnf": .object(cnf)])
        #expect(t.status == 401)
        let challenge = t.head?.fields.first("WWW-Authenticate") ?? ""
        #expect(challenge.contains("error=\"invalid_token\"") && challenge.contains("client certificate"))
    }

    @Test func anUnboundTokenIsAdmitted() throws {
        #expect(try ask([:]).status == 200)
    }

    @Test func aTokenBoundToAKeyOfAnUnknownKindIsRefused() throws {
        let t = try ask(["cnf": .object(JSONObject(["kid": .string("k")]))])
        let challenge = t.head?.fields.first("WWW-Authenticate") ?? ""
        #expect(t.status == 401 && challenge.contains("error=\"invalid_token\""))
    }

    @Test func certificateHeadersOnADecisionConfigAreWarnedAbout() throws {
        let yaml = Self.yaml.replacingOccurrences(
            of: "    issuers: [one]", with: "    issuers: [one]\n    certificate_headers: { X-Spiffe-Id: uri }")
        let cfg = try ConfigParser.parse(yaml: yaml, environment: [:], baseDirectory: "/", cores: 1).get()
        #expect(cfg.warnings.contains { $0.description.contains("decision mode never sets these") })
        let plain = try ConfigParser.parse(yaml: Self.yaml, environment: [:], baseDirectory: "/", cores: 1).get()
        #expect(!plain.warnings.contains { $0.description.contains("decision mode never sets these") })
    }
}
