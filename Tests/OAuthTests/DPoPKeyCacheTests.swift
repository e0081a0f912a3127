import Foundation
import JOSE
import Testing

@testable import OAuth

/// The per-loop cache of proof headers (`DPoPKeyCache`): a header seen before is not decoded,
/// parsed, checked or imported again — and nothing else about a proof is taken on trust. Each
/// test first puts a good proof's header in the cache, then sends a proof with the same header
/// bytes that breaks another rule, and expects exactly that rule's refusal.
@Suite("DPoP proof key cache")
struct DPoPKeyCacheTests {
    typealias P = DPoPProofTests

    /// A cache holding `P.key`'s header, from one accepted proof.
    func warmCache() throws -> DPoPKeyCache {
        let cache = DPoPKeyCache()
        _ = try DPoPProofVerifier().verify(try P.proof(), request: P.request(), keyCache: cache)
        #expect(cache.count == 1 && cache.hits == 0)
        return cache
    }

    func expectRefused(
        _ proof: String, cache: DPoPKeyCache, verifier: DPoPProofVerifier = DPoPProofVerifier(),
        request: DPoPProofVerifier.Request = P.request(), reason: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try verifier.verify(proof, request: request, keyCache: cache)
            Issue.record("accepted a proof that breaks: \(reason)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.reason.contains(reason), "got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func theSameHeaderIsReusedAndGivesTheSameKey() throws {
        let cache = try warmCache()
        let p = try DPoPProofVerifier().verify(try P.proof(), request: P.request(), keyCache: cache)
        #expect(cache.hits == 1 && cache.count == 1)
        #expect(p.jkt == P.key.thumbprint())
    }

    @Test func aCachedHeaderStillNeedsTheKeysSignature() throws {
        let cache = try warmCache()
        let other = try JWK.generate(for: .ES256, kid: nil)
        // Same header bytes (P.key's jwk), signed by another key.
        expectRefused(
            try P.proof(header: ["jwk": .object(P.key.publicJWK())], key: other), cache: cache,
            reason: "signature does not verify")
        #expect(cache.hits == 1)
        let p = try P.proof()
        let tampered = P().Attack_replaceClaims(p) { $0.replacingOccurrences(of: "\"GET\"", with: "\"PUT\"") }
        expectRefused(tampered, cache: cache, request: P.request(method: "PUT"), reason: "signature does not verify")
        #expect(cache.hits == 2)
    }

    @Test func aCachedHeaderStillMeetsTheRoutesAlgorithms() throws {
        let cache = try warmCache()
        var onlyES384 = DPoPProofVerifier()
        onlyES384.algorithms = [.ES384]
        expectRefused(try P.proof(), cache: cache, verifier: onlyES384, reason: "algorithm is not accepted")
        #expect(cache.hits == 1)
    }

    @Test func aCachedHeaderStillNeedsEveryClaimAndAWellFormedJWS() throws {
        let cache = try warmCache()
        expectRefused(try P.proof(claims: ["jti": nil]), cache: cache, reason: "needs a jti")
        expectRefused(try P.proof(claims: ["htu": .string("https://evil.example/")]), cache: cache, reason: "htu")
        expectRefused(try P.proof(claims: ["ath": .string("AAAA")]), cache: cache, reason: "ath does not match")
        expectRefused(try P.proof(claims: ["iat": .number(String(P.now - 600))]), cache: cache, reason: "too old")
        // Header bytes known, the rest not base64url / not three parts: refused as before.
        let parts = try P.proof().split(separator: ".").map(String.init)
        expectRefused(parts[0] + ".*." + parts[2], cache: cache, reason: "well-formed")
        expectRefused(parts[0] + "." + parts[1] + ".", cache: cache, reason: "well-formed")
        expectRefused(parts[0] + "." + parts[1], cache: cache, reason: "well-formed")
        #expect(cache.count == 1)
    }

    @Test func refusedHeadersAreNeverCached() throws {
        let cache = DPoPKeyCache()
        let privateKey = try P.proof(header: ["jwk": .object(try P.key.privateJWK())])
        for _ in 0..<2 {
            expectRefused(privateKey, cache: cache, reason: "private key")
            expectRefused(try P.proof(header: ["typ": .string("JWT")]), cache: cache, reason: "typ")
        }
        #expect(cache.count == 0 && cache.hits == 0)
    }

    @Test func headersDifferingInOneByteAreDifferentEntries() throws {
        let cache = try warmCache()
        _ = try DPoPProofVerifier().verify(
            try P.proof(header: ["kid": .string("a")]), request: P.request(), keyCache: cache)
        _ = try DPoPProofVerifier().verify(
            try P.proof(header: ["kid": .string("b")]), request: P.request(), keyCache: cache)
        #expect(cache.count == 3 && cache.hits == 0)
        let a = DPoPKeyCache.HeaderBytes(bytes: Array("eyJhbGciOiJFUzI1NiJ9".utf8))
        let b = DPoPKeyCache.HeaderBytes(bytes: Array("eyJhbGciOiJFUzI1NiJ8".utf8))
        #expect(a != b)
        #expect(a == DPoPKeyCache.HeaderBytes(bytes: Array("eyJhbGciOiJFUzI1NiJ9".utf8)))
    }

    @Test func theCacheIsBounded() throws {
        let cache = DPoPKeyCache(capacity: 2)
        for _ in 0..<3 {
            let k = try JWK.generate(for: .ES256, kid: nil)
            _ = try DPoPProofVerifier().verify(try P.proof(key: k), request: P.request(), keyCache: cache)
        }
        #expect(cache.count == 2)
    }
}
