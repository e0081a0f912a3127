import JOSE
import Testing

@testable import MessageSignatures

/// The verifier's own rules (RFC 9421 §3.2, §7): the tag, the components it requires, the
/// clock, the nonce, and the algorithm that comes from the key. Each refusal is sent as a
/// sender would get it wrong.
@Suite("RFC 9421 §3.2: what the verifier refuses")
struct SignatureVerifierTests {
    static let now: Int64 = 1_800_000_000
    static let key = try! JWK.generate(for: .EdDSA, kid: "k1")
    static let requirements = SignatureRequirements(
        components: try! ["@method", "@target-uri", "authorization"].map { try ComponentIdentifier(config: $0) },
        coverIfPresent: [try! ComponentIdentifier("dpop")], tag: "app", maxAge: 60, leeway: 5, nonceRequired: false)

    static func signedRequest(
        components: [String] = ["@method", "@target-uri", "authorization"], created: Int64 = now, expires: Int64? = nil,
        nonce: String? = nil, alg: String? = nil, tag: String? = "app", extra: [(String, String)] = [],
        key: JWK = key
    ) throws -> SignedMessage {
        let fields = [("authorization", "Bearer t"), ("host", "api.example")] + extra
        let unsigned = SignedMessage(
            method: "POST", scheme: "https", authority: "api.example", target: "/pay",
            fields: fields.map { SignedMessage.Field(name: $0.0, value: $0.1) })
        let params = SignatureParameters(
            components: try components.map { try ComponentIdentifier(config: $0) }, created: created, expires: expires,
            nonce: nonce, alg: alg, keyid: "k1", tag: tag)
        let signed = try MessageSigner.sign(
            unsigned, params, label: "sig1", key: key, algorithm: SignatureAlgorithm.of(key)!)
        return SignedMessage(
            method: "POST", scheme: "https", authority: "api.example", target: "/pay",
            fields: (fields + [("signature-input", signed.input), ("signature", signed.signature)]).map {
                SignedMessage.Field(name: $0.0, value: $0.1)
            })
    }

    static func check(
        _ message: SignedMessage, _ requirements: SignatureRequirements = requirements, with key: JWK = key
    ) throws {
        let fields = try MessageSignatureFields(
            input: message.lines("signature-input").first, signature: message.lines("signature").first)
        let chosen = try SignatureVerifier.select(fields, for: requirements, in: message, now: now)
        try SignatureVerifier.verify(chosen, in: message, with: key)
    }

    static func reason(_ body: () throws -> Void) -> MessageSignatureError.Reason? {
        do { try body() } catch let e as MessageSignatureError { return e.reason } catch { return nil }
        return nil
    }

    @Test("A signature that meets every rule verifies")
    func accepted() throws {
        try Self.check(try Self.signedRequest())
        try Self.check(try Self.signedRequest(alg: "ed25519"))
        try Self.check(try Self.signedRequest(created: Self.now - 60))
        try Self.check(try Self.signedRequest(created: Self.now + 5))
    }

    @Test("Refused: a component not covered, the tag, the clock, the nonce, the algorithm, the key")
    func refused() throws {
        #expect(
            Self.reason { try Self.check(try Self.signedRequest(components: ["@method", "@target-uri"])) }
                == .notCovered)
        #expect(Self.reason { try Self.check(try Self.signedRequest(components: [])) } == .notCovered)
        #expect(
            Self.reason {
                try Self.check(try Self.signedRequest(extra: [("dpop", "proof")]))
            } == .notCovered)
        #expect(Self.reason { try Self.check(try Self.signedRequest(tag: "other")) } == .wrongTag)
        #expect(Self.reason { try Self.check(try Self.signedRequest(tag: nil)) } == .wrongTag)
        #expect(Self.reason { try Self.check(try Self.signedRequest(created: Self.now - 300)) } == .expired)
        #expect(Self.reason { try Self.check(try Self.signedRequest(created: Self.now + 30)) } == .expired)
        #expect(Self.reason { try Self.check(try Self.signedRequest(expires: Self.now - 10)) } == .expired)
        #expect(Self.reason { try Self.check(try Self.signedRequest(alg: "ecdsa-p256-sha256")) } == .algorithmMismatch)
        let other = try JWK.generate(for: .EdDSA, kid: "k1")
        #expect(Self.reason { try Self.check(try Self.signedRequest(), with: other) } == .badSignature)
        let nonced = SignatureRequirements(
            components: Self.requirements.components, tag: "app", maxAge: 60, leeway: 5, nonceRequired: true)
        #expect(Self.reason { try Self.check(try Self.signedRequest(), nonced) } == .replayed)
        try Self.check(try Self.signedRequest(nonce: "n-1"), nonced)
    }

    @Test("The algorithm comes from the key: an RSA key's and an EC key's")
    func algorithmFromKey() throws {
        let ec = try JWK.generate(for: .ES256, kid: "k1")
        try Self.check(try Self.signedRequest(key: ec), with: ec)
        #expect(SignatureAlgorithm.of(ec)?.name == "ecdsa-p256-sha256")
        // An EC key offered for a message signed by the Ed25519 key: the message's alg names
        // the other algorithm.
        #expect(Self.reason { try Self.check(try Self.signedRequest(alg: "ed25519"), with: ec) } == .algorithmMismatch)
        let rsa = try JWK.generate(for: .PS512, kid: "k1")
        #expect(SignatureAlgorithm.of(rsa)?.name == "rsa-pss-sha512")
        // A key without `alg` (the RFC's RSA test key) takes the configured RSA algorithm.
        let bare = RFC9421ExampleTests.rsaPSS
        #expect(SignatureAlgorithm.of(bare)?.name == "rsa-pss-sha512")
        #expect(SignatureAlgorithm.of(bare, rsa: SignatureAlgorithm(name: "rsa-v1_5-sha256")!)?.jws == .RS256)
    }

    @Test("A verifier's algorithm list refuses a key of another algorithm, however well it signs")
    func allowedAlgorithms() throws {
        let ec384 = try JWK.generate(for: .ES384, kid: "k1")
        let message = try Self.signedRequest(key: ec384)
        try Self.check(message, with: ec384)
        let fields = try MessageSignatureFields(
            input: message.lines("signature-input").first, signature: message.lines("signature").first)
        let chosen = try SignatureVerifier.select(fields, for: Self.requirements, in: message, now: Self.now)
        let fapi: Set<JWSAlgorithm> = [.PS256, .PS512, .ES256, .EdDSA]
        #expect(
            Self.reason { try SignatureVerifier.verify(chosen, in: message, with: ec384, allowed: fapi) }
                == .algorithmMismatch)
        try SignatureVerifier.verify(chosen, in: message, with: ec384, allowed: [.ES384])
    }

    /// `created` and `expires` as a signer chose them, at Int64's ends (wider than RFC 9651's
    /// 15 digits allow on the wire), against spans at theirs: judged, never trapped on.
    @Test("created and expires at Int64's ends are judged without a trap")
    func timesAtTheEnds() throws {
        let ends: [Int64] = [.min, .min + 1, -999_999_999_999_999, -1, 0, 999_999_999_999_999, .max - 1, .max]
        for created in ends {
            for expires in ends + [nil] as [Int64?] {
                let params = SignatureParameters(
                    components: [], created: created, expires: expires, keyid: "k", tag: nil)
                for (maxAge, leeway) in [(Int64?.none, Int64(0)), (60, 60), (.max, .max), (.min, .min)] {
                    let requirements = SignatureRequirements(
                        components: [], tag: nil, maxAge: maxAge, leeway: leeway, nonceRequired: false)
                    _ = try? SignatureVerifier.checkTimes(params, requirements, now: 1_780_000_000)
                }
            }
        }
        let now: Int64 = 1_780_000_000
        let fresh = SignatureRequirements(components: [], tag: nil, maxAge: 60, leeway: 5, nonceRequired: false)
        let old = SignatureParameters(components: [], created: .min, keyid: "k", tag: nil)
        #expect(throws: MessageSignatureError.self) { try SignatureVerifier.checkTimes(old, fresh, now: now) }
        let future = SignatureParameters(components: [], created: .max, keyid: "k", tag: nil)
        #expect(throws: MessageSignatureError.self) { try SignatureVerifier.checkTimes(future, fresh, now: now) }
        let expired = SignatureParameters(components: [], created: now, expires: .min, keyid: "k", tag: nil)
        #expect(throws: MessageSignatureError.self) { try SignatureVerifier.checkTimes(expired, fresh, now: now) }
        try SignatureVerifier.checkTimes(
            SignatureParameters(components: [], created: now, expires: .max, keyid: "k", tag: nil), fresh, now: now)
    }

    @Test("Content-Digest: refused when it names no known algorithm or is malformed")
    func contentDigest() throws {
        #expect(throws: MessageSignatureError.self) { try ContentDigest(field: "md5=:AAAA:") }
        #expect(throws: MessageSignatureError.self) { try ContentDigest(field: "sha-256=:AAAA:") }
        #expect(throws: MessageSignatureError.self) { try ContentDigest(field: "sha-256=\"x\"") }
        #expect(throws: MessageSignatureError.self) { try ContentDigest(field: "((") }
        let field = ContentDigest.field(for: Array("hello".utf8))
        let digest = try ContentDigest(field: field + ", md5=:AAAA:")
        let contexts = digest.contexts()
        for c in contexts { c.update(Array("hello".utf8)) }
        #expect(digest.matches(contexts))
    }

    /// RFC 9421 §2.1: a signature over `content-digest` covers every line, combined. Two
    /// lines (a right sha-256, then a sha-512 of another body) are checked together; a key
    /// given twice, on one line or across two, is refused (RFC 9651 keeps the last one).
    @Test("Content-Digest: every line is checked, and an algorithm named twice is refused")
    func contentDigestLines() throws {
        let body = Array("{\"amount\": 10}".utf8)
        let right = ContentDigest.field(for: body)
        let other = "sha-512=:" + Base64.standard(Digest.sha512.hash(Array("{\"amount\": 99}".utf8))) + ":"
        let both = try ContentDigest(lines: [right, "  " + other + " "])
        let contexts = both.contexts()
        for c in contexts { c.update(body) }
        #expect(contexts.count == 2)
        #expect(!both.matches(contexts))
        let wrongFirst = ContentDigest.field(for: Array("x".utf8))
        for lines in [[right, wrongFirst], [right + ", " + wrongFirst], [wrongFirst, right]] {
            #expect(throws: MessageSignatureError.self) { try ContentDigest(lines: lines) }
        }
        let good = try ContentDigest(lines: [right, "md5=:AAAA:"])
        let again = good.contexts()
        for c in again { c.update(body) }
        #expect(good.matches(again))
        // A comma inside a string parameter is no member boundary.
        #expect(ContentDigest.memberCount(#"sha-256=:AA==:;x="a,b", md5=:AA==:"#) == 2)
    }

    @Test("Accept-Signature names the components, created, nonce and tag")
    func acceptSignature() throws {
        #expect(
            AcceptSignature.field(label: "sig1", Self.requirements)
                == #"sig1=("@method" "@target-uri" "authorization");created;tag="app""#)
    }
}
