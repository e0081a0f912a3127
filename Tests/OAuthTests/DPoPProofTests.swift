import Foundation
import JOSE
import Testing

@testable import OAuth

/// RFC 9449 §4.3 from the attacker's side: every check has a proof that breaks exactly that
/// rule, and each must fail with the rule's reason (and only the nonce rules ask for a nonce).
@Suite("DPoP proofs (RFC 9449 §4.3)")
struct DPoPProofTests {
    static let now: Int64 = 1_700_000_000
    static let key = try! JWK.generate(for: .ES256, kid: nil)
    static let token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"
    static let uri = "https://api.example.com/orders/1"

    /// A proof whose header and claims start from a valid one and are then changed as given.
    static func proof(
        header: [String: JSONValue?] = [:], claims: [String: JSONValue?] = [:], alg: JWSAlgorithm = .ES256,
        key signer: JWK = key
    ) throws -> String {
        var h = JSONObject()
        h["typ"] = .string("dpop+jwt")
        h["alg"] = .string(alg.rawValue)
        h["jwk"] = .object(signer.isPrivate && alg.isSymmetric == false ? signer.publicJWK() : JSONObject())
        for (k, v) in header { h[k] = v }
        var c = JSONObject()
        c["jti"] = .string(Base64URL.encode(SecureRandom.bytes(16)))
        c["htm"] = .string("GET")
        c["htu"] = .string(uri)
        c["iat"] = .number(String(now))
        c["ath"] = .string(Base64URL.encode(Digest.sha256.hash(Array(token.utf8))))
        for (k, v) in claims { c[k] = v }
        let input =
            Base64URL.encode(JSONSerializer.serialize(.object(h))) + "."
            + Base64URL.encode(JSONSerializer.serialize(.object(c)))
        return input + "." + Base64URL.encode(try signer.sign(alg, message: Array(input.utf8)))
    }

    static func request(method: String = "GET", uri: String = uri, token: String? = token, now: Int64 = now)
        -> DPoPProofVerifier.Request
    {
        .init(
            method: method, uri: uri, accessToken: token, now: now,
            normalizePath: { $0.replacingOccurrences(of: "/./", with: "/") })
    }

    func expectRefused(
        _ proof: String, _ request: DPoPProofVerifier.Request = request(),
        verifier: DPoPProofVerifier = DPoPProofVerifier(),
        code: DPoPProofError.Code = .invalidProof, reason: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try verifier.verify(proof, request: request)
            Issue.record("accepted a proof that breaks: \(reason)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.reason.contains(reason), "got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func validProofPasses() throws {
        let p = try DPoPProofVerifier().verify(try Self.proof(), request: Self.request())
        #expect(p.jkt == Self.key.thumbprint())
        #expect(p.acceptableUntil == Self.now + 60 + 5)
        #expect(p.nonceIsStale == false)
    }

    @Test func everyAllowedAlgorithmVerifies() throws {
        for alg in [JWSAlgorithm.ES256, .ES384, .PS256, .RS256, .EdDSA] {
            let k = try JWK.generate(for: alg, kid: nil)
            let p = try DPoPProofVerifier().verify(try Self.proof(alg: alg, key: k), request: Self.request())
            #expect(p.jkt == k.thumbprint())
        }
    }

    @Test func malformedProofs() throws {
        expectRefused("not-a-jwt", reason: "well-formed")
        expectRefused(try Self.proof() + "x", reason: "well-formed")
        expectRefused(String(repeating: "a", count: 9000), reason: "well-formed")
    }

    @Test func typMustBeDPoPJWT() throws {
        expectRefused(try Self.proof(header: ["typ": nil]), reason: "typ")
        expectRefused(try Self.proof(header: ["typ": .string("JWT")]), reason: "typ")
        expectRefused(try Self.proof(header: ["typ": .string("at+jwt")]), reason: "typ")
    }

    @Test func symmetricAndDisallowedAlgorithms() throws {
        let hmac = try JWK(json: #"{"kty":"oct","k":"\#(Base64URL.encode(SecureRandom.bytes(32)))"}"#)
        expectRefused(
            try Self.proof(header: ["jwk": .object(Self.key.publicJWK())], alg: .HS256, key: hmac), reason: "algorithm")
        var onlyES384 = DPoPProofVerifier()
        onlyES384.algorithms = [.ES384]
        expectRefused(try Self.proof(), verifier: onlyES384, reason: "algorithm")
    }

    @Test func oversizedRSAProofKeysAreRefusedBeforeAnyWork() throws {
        let big = try JWK.generate(for: .RS256, kid: nil, rsaBits: 4608)
        expectRefused(try Self.proof(alg: .RS256, key: big), reason: "at most 4096 bits")
        var jwk = try JWK.generate(for: .RS256, kid: nil).publicJWK()
        jwk["e"] = .string("AQAAAQ")  // 2^24 + 1: not 65537
        expectRefused(
            try Self.proof(header: ["jwk": .object(jwk)], alg: .RS256, key: try JWK.generate(for: .RS256, kid: nil)),
            reason: "exponent 65537")
        let ok = try JWK.generate(for: .RS256, kid: nil, rsaBits: 4096)
        _ = try DPoPProofVerifier().verify(try Self.proof(alg: .RS256, key: ok), request: Self.request())
    }

    @Test func jwkMustBeAPublicKey() throws {
        expectRefused(try Self.proof(header: ["jwk": .object(try Self.key.privateJWK())]), reason: "private key")
        expectRefused(try Self.proof(header: ["jwk": nil]), reason: "no jwk")
        expectRefused(try Self.proof(header: ["jwk": .string("x")]), reason: "no jwk")
    }

    @Test func signatureMustBeByTheEmbeddedKey() throws {
        let other = try JWK.generate(for: .ES256, kid: nil)
        // Claims to be Self.key, signed by another key.
        expectRefused(try Self.proof(header: ["jwk": .object(Self.key.publicJWK())], key: other), reason: "signature")
        let p = try Self.proof()
        let tampered = Attack_replaceClaims(p) { $0.replacingOccurrences(of: "\"GET\"", with: "\"PUT\"") }
        expectRefused(tampered, Self.request(method: "PUT"), reason: "signature")
    }

    @Test func requiredClaims() throws {
        for claim in ["jti", "htm", "htu", "iat"] {
            expectRefused(try Self.proof(claims: [claim: nil]), reason: "needs")
        }
        expectRefused(try Self.proof(claims: ["iat": .string("1700000000")]), reason: "iat")
        expectRefused(try Self.proof(claims: ["jti": .string("")]), reason: "jti")
    }

    @Test func htmMustMatch() throws {
        expectRefused(try Self.proof(claims: ["htm": .string("POST")]), reason: "htm")
        expectRefused(try Self.proof(claims: ["htm": .string("get")]), reason: "htm")
    }

    @Test func htuMustMatchSchemeHostPortPath() throws {
        for bad in [
            "http://api.example.com/orders/1", "https://evil.example.com/orders/1",
            "https://api.example.com:8443/orders/1",
            "https://api.example.com/orders/2", "https://api.example.com/orders/1/",
            "https://api.example.com/orders/1?x=1",
            "https://api.example.com/orders/1#f", "https://user@api.example.com/orders/1", "/orders/1",
            "ftp://api.example.com/orders/1"
        ] {
            expectRefused(try Self.proof(claims: ["htu": .string(bad)]), reason: "htu")
        }
    }

    @Test func htuComparedInNormalForm() throws {
        for same in [
            "HTTPS://API.example.COM/orders/1", "https://api.example.com:443/orders/1",
            "https://api.example.com/orders/./1"
        ] {
            _ = try DPoPProofVerifier().verify(try Self.proof(claims: ["htu": .string(same)]), request: Self.request())
        }
        // The request side is normalized too: how the client wrote the Host does not matter.
        _ = try DPoPProofVerifier().verify(
            try Self.proof(), request: Self.request(uri: "https://API.EXAMPLE.COM:443/orders/1"))
        // The request's query is ignored (§4.3 check 9); only the claim may not carry one.
        _ = try DPoPProofVerifier().verify(try Self.proof(), request: Self.request(uri: Self.uri + "?page=2"))
        #expect(HTU.normalize("http://h:80") == "http://h/")
    }

    @Test func iatWindow() throws {
        expectRefused(try Self.proof(claims: ["iat": .number(String(Self.now - 66))]), reason: "too old")
        expectRefused(try Self.proof(claims: ["iat": .number(String(Self.now + 66))]), reason: "future")
        _ = try DPoPProofVerifier().verify(
            try Self.proof(claims: ["iat": .number(String(Self.now - 65))]), request: Self.request())
        _ = try DPoPProofVerifier().verify(
            try Self.proof(claims: ["iat": .number(String(Self.now + 65))]), request: Self.request())
    }

    /// A signed iat at Int64's ends is refused as outside the window, never subtracted into a
    /// trap.
    @Test(arguments: [Int64.min, Int64.min + 1, -1, 0, 253_402_300_800, Int64.max - 1, Int64.max])
    func anIatAtInt64sEndsIsRefused(_ iat: Int64) throws {
        let reason = iat < Self.now ? "too old" : "future"
        expectRefused(try Self.proof(claims: ["iat": .number(String(iat))]), reason: reason)
    }

    @Test func athBindsTheToken() throws {
        expectRefused(try Self.proof(claims: ["ath": nil]), reason: "ath")
        expectRefused(try Self.proof(), Self.request(token: "another-token"), reason: "ath")
        expectRefused(
            try Self.proof(claims: ["ath": .string(Base64URL.encode(Digest.sha256.hash(Array("x".utf8))))]),
            reason: "ath")
    }

    // MARK: server nonces (§8, §9)

    static let nonces = DPoPNonces(keys: [MACKey(secret: Array(repeating: 7, count: 32))!], lifetime: 120)

    var nonceVerifier: DPoPProofVerifier {
        var v = DPoPProofVerifier()
        v.nonces = Self.nonces
        return v
    }

    @Test func nonceRequiredAndChecked() throws {
        let nonce = Self.nonces.issue(now: Self.now)
        let p = try nonceVerifier.verify(try Self.proof(claims: ["nonce": .string(nonce)]), request: Self.request())
        #expect(p.nonce == nonce)
        expectRefused(try Self.proof(), verifier: nonceVerifier, code: .useNonce, reason: "nonce is required")
        expectRefused(
            try Self.proof(claims: ["nonce": .string("made-up")]), verifier: nonceVerifier, code: .useNonce,
            reason: "not valid")
        // Forged: same slot, tag under another key.
        let forged = DPoPNonces(keys: [MACKey(secret: Array(repeating: 8, count: 32))!], lifetime: 120).issue(
            now: Self.now)
        expectRefused(
            try Self.proof(claims: ["nonce": .string(forged)]), verifier: nonceVerifier, code: .useNonce,
            reason: "not valid")
        // Expired: issued two slots ago.
        let old = Self.nonces.issue(now: Self.now - 121)
        expectRefused(
            try Self.proof(claims: ["nonce": .string(old)]), verifier: nonceVerifier, code: .useNonce,
            reason: "not valid")
        // The iat window still applies with a nonce: an old proof with a fresh nonce fails.
        expectRefused(
            try Self.proof(claims: ["nonce": .string(nonce), "iat": .number(String(Self.now - 3600))]),
            verifier: nonceVerifier,
            reason: "too old")
    }

    @Test func staleNonceStillValidAndFlagged() throws {
        let previousSlot = Self.nonces.issue(now: Self.now - 60)
        let p = try nonceVerifier.verify(
            try Self.proof(claims: ["nonce": .string(previousSlot)]), request: Self.request())
        #expect(p.nonceIsStale)
        // Remembered until the first of: the iat window ends, the nonce expires.
        #expect(p.acceptableUntil == min(Self.now + 65, Self.now - 60 - (Self.now - 60) % 60 + 120))
    }

    /// Replaces the claims segment of a signed proof (leaving its signature as it was).
    func Attack_replaceClaims(_ jws: String, _ change: (String) -> String) -> String {
        var parts = jws.split(separator: ".").map(String.init)
        let claims = String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self)
        parts[1] = Base64URL.encode(Array(change(claims).utf8))
        return parts.joined(separator: ".")
    }
}

@Suite("DPoP nonces (RFC 9449 §8, stateless)")
struct DPoPNonceTests {
    let key1 = MACKey(secret: Array(repeating: 1, count: 32))!
    let key2 = MACKey(secret: Array(repeating: 2, count: 32))!

    @Test func lifetimeAndStaleness() {
        let n = DPoPNonces(keys: [key1], lifetime: 100)
        let t: Int64 = 1_000_000  // slot boundary (slot = 50 s)
        let nonce = n.issue(now: t)
        #expect(n.check(nonce, now: t) == .valid(issuedAt: t, expiresAt: t + 100, stale: false))
        #expect(n.check(nonce, now: t + 49) == .valid(issuedAt: t, expiresAt: t + 100, stale: false))
        #expect(n.check(nonce, now: t + 50) == .valid(issuedAt: t, expiresAt: t + 100, stale: true))
        #expect(n.check(nonce, now: t + 100) == .invalid)
        // From the future beyond the leeway (another replica's clock far ahead).
        #expect(n.check(n.issue(now: t + 100), now: t) == .invalid)
    }

    @Test func rotationAndForgery() {
        let old = DPoPNonces(keys: [key1], lifetime: 100)
        let rotated = DPoPNonces(keys: [key2, key1], lifetime: 100)
        let t: Int64 = 2_000_000
        #expect(rotated.check(old.issue(now: t), now: t) != .invalid)
        #expect(old.check(rotated.issue(now: t), now: t) == .invalid)
        var raw = Base64URL.decode(old.issue(now: t))!
        raw[7] ^= 1  // another slot under the same tag
        #expect(old.check(Base64URL.encode(raw), now: t) == .invalid)
        #expect(old.check("", now: t) == .invalid)
        #expect(old.check(String(repeating: "A", count: 32), now: t) == .invalid)
    }

    @Test func shortKeysRefused() {
        #expect(MACKey(secret: Array(repeating: 1, count: 31)) == nil)
    }
}

@Suite("DPoP proof signer (the gateway as a DPoP client)")
struct DPoPProofSignerTests {
    @Test func proofsCarryTheKeyByValueOnlyAndVerify() throws {
        let key = try JWK.generate(for: .ES256, kid: "named")
        let signer = try DPoPProofSigner(key: key, alg: .ES256)
        let proof = try signer.proof(
            method: "POST", url: "https://as.example/token?x=1", accessToken: "tok", nonce: "n", now: 1_700_000_000)
        let jws = try CompactJWS(proof)
        #expect(
            jws.header.kid == nil && jws.header.object["jwk"]?.object?["kid"] == nil
                && jws.header.object["jwk"]?.object?["d"] == nil)
        #expect(try jws.claims()["htu"]?.string == "https://as.example/token")
        var v = DPoPProofVerifier()
        v.window = 60
        let checked = try v.verify(
            proof,
            request: .init(method: "POST", uri: "https://as.example/token", accessToken: "tok", now: 1_700_000_000))
        #expect(checked.jkt == key.thumbprint() && checked.nonce == "n")
    }
}
