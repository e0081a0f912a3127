import Foundation
import JOSE
import MessageSignatures
import Reactor
import Testing

@testable import Gateway

/// `sign_response`: which answers are held and signed (never a stream, never one without
/// content), and what a signed answer carries: its digest, and a signature that verifies over
/// the status, the content and the request it answers, bound to the request's signature.
@Suite("Signed answers: what is held, what is covered")
struct ResponseSigningTests {
    static func fields(_ pairs: [(String, String)]) -> HTTP1Fields {
        var f = HTTP1Fields()
        for (n, v) in pairs { f.append(n, v) }
        return f
    }

    @Test("Streams, upgrades and answers without content are never held")
    func notHeld() {
        #expect(
            ResponseSigner.signs(
                HTTPResponseHead(status: 200, fields: Self.fields([("Content-Type", "application/json")]))))
        #expect(
            !ResponseSigner.signs(
                HTTPResponseHead(status: 200, fields: Self.fields([("Content-Type", "text/event-stream")]))))
        #expect(
            !ResponseSigner.signs(
                HTTPResponseHead(status: 200, fields: Self.fields([("Content-Type", "application/grpc")]))))
        #expect(
            !ResponseSigner.signs(HTTPResponseHead(status: 200, fields: Self.fields([("X-Accel-Buffering", "no")]))))
        #expect(!ResponseSigner.signs(HTTPResponseHead(status: 101, fields: Self.fields([]))))
        #expect(!ResponseSigner.signs(HTTPResponseHead(status: 204, fields: Self.fields([]))))
        #expect(!ResponseSigner.signs(HTTPResponseHead(status: 304, fields: Self.fields([]))))
    }

    @Test("A signed answer verifies over its status, content and request, and names the request's signature")
    func signed() throws {
        let key = try JWK.generate(for: .ES256, kid: "gw-r1")
        let signing = MessageSigningConfig(
            key: key, keyid: "gw-r1", algorithm: SignatureAlgorithm.of(key)!,
            components: MessageSigningConfig.defaultResponseComponents, tag: "fapi-2-response")
        let request = SignedMessage(
            method: "POST", scheme: "https", authority: "api.example", target: "/pay/1",
            fields: [
                SignedMessage.Field(name: "signature-input", value: #"sig1=("@method");created=1;keyid="c""#),
                SignedMessage.Field(name: "signature", value: "sig1=:AAAA:")
            ])
        let signer = ResponseSigner(signing: signing, request: request, requestLabel: "sig1")
        signer.held.append("{\"ok\":true}")
        let head = HTTPResponseHead(
            status: 201,
            fields: Self.fields([("Content-Type", "application/json"), ("Content-Digest", "sha-256=:AAAA:")]))
        let added = signer.fields(for: head, now: 1_800_000_000)
        let byName = Dictionary(added, uniquingKeysWith: { a, _ in a })
        #expect(byName["Content-Digest"] == ContentDigest.field(for: Array("{\"ok\":true}".utf8)))
        // The upstream's own Content-Digest is replaced, not signed beside the gateway's.
        let response = SignedMessage(
            status: 201,
            fields: [
                SignedMessage.Field(name: "content-type", value: "application/json"),
                SignedMessage.Field(name: "content-digest", value: byName["Content-Digest"]!),
                SignedMessage.Field(name: "signature-input", value: byName["Signature-Input"]!),
                SignedMessage.Field(name: "signature", value: byName["Signature"]!)
            ], answering: request)
        let parsed = try MessageSignatureFields(input: byName["Signature-Input"], signature: byName["Signature"])
        let chosen = try #require(parsed.signatures.first)
        #expect(chosen.label == "tokengate")
        #expect(chosen.parameters.tag == "fapi-2-response")
        #expect(
            chosen.parameters.components.map(\.serialized) == [
                "\"@status\"", "\"content-type\"", "\"content-digest\"", "\"@method\";req", "\"@target-uri\";req",
                "\"signature\";req;key=\"sig1\""
            ])
        try SignatureVerifier.verify(chosen, in: response, with: key)
    }

    @Test("check-config says which answers go unsigned; a malformed sign_response is refused")
    func config() throws {
        let key = try JWK.generate(for: .EdDSA, kid: "gw-r1")
        let path = "/tmp/tokengate-response-signing-\(getpid()).jwk"
        try JSONSerializer.serialize(.object(try key.privateJWK())).write(
            toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        func yaml(_ signing: String) -> String {
            """
            listen: 127.0.0.1:8080
            upstreams: { app: { url: "http://127.0.0.1:9000" } }
            routes:
              - match: { path_prefix: / }
                upstream: app
                auth: none
                sign_response: \(signing)
            """
        }
        let cfg = try ConfigParser.parse(
            yaml: yaml("{ key_file: \"\(path)\", tag: fapi-2-response }"), environment: [:], baseDirectory: "/",
            cores: 1
        ).get()
        #expect(cfg.warnings.contains { $0.description.contains("answers that stream go unsigned") })
        #expect(cfg.responseSigningKeys.map(\.keyid) == ["gw-r1"])
        for bad in [
            "{ tag: x }", "{ key_file: /nonexistent }", "{ key_file: \"\(path)\", components: [\"@method\"] }",
            "{ key_file: \"\(path)\", components: [] }"
        ] {
            guard case .failure = ConfigParser.parse(yaml: yaml(bad), environment: [:], baseDirectory: "/", cores: 1)
            else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }
}
