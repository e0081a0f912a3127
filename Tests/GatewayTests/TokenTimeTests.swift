import Foundation
import JOSE
import OAuth
import Testing

@testable import Gateway
@testable import Reactor

/// The token routes' time rules, driven by a manual clock through a worker's decision endpoint
/// (no sockets, no sleeping): access-token `exp`/`nbf` with the issuer's leeway, the cache of
/// verified tokens (`token_cache.ttl`), the DPoP proof's `iat` window (RFC 9449 §11.1) with its
/// leeway, the replay window of its `jti`, and server nonces (`dpop.nonce_lifetime`, §8).
@Suite("Token time rules with a manual clock")
struct TokenTimeTests {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        trusted_proxies: [10.0.0.0/8]
        public_url: https://api.example
        decision: {}
        token_cache: { entries: 100, ttl: 120s }
        dpop: { nonce_lifetime: 5m }
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api], leeway: 5s }
        upstreams:
          app: { url: "http://127.0.0.1:9" }
        routes:
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
          - name: pay
            match: { path_prefix: /pay/ }
            upstream: app
            auth: dpop
            issuers: [one]
            dpop: { iat_window: 60s, leeway: 5s }
          - name: nonced
            match: { path_prefix: /nonced/ }
            upstream: app
            auth: dpop
            issuers: [one]
            dpop: { iat_window: 60s, leeway: 5s, nonce: required }
        """

    /// A worker on `clock` that holds the issuer's signing key.
    final class Harness {
        let clock = ManualClock()
        let worker: Worker
        let key: JWK
        let proofs: DPoPProofSigner

        init() throws {
            worker = try testWorker(TokenTimeTests.yaml, wallClock: clock)
            key = try JWK.generate(for: .ES256, kid: "k1")
            try publishIssuerKey(key, on: worker)
            proofs = try DPoPProofSigner(key: try JWK.generate(for: .ES256, kid: "p"), alg: .ES256)
        }

        var now: Int64 { clock.seconds }

        /// An access token for `api`; `exp`/`nbf` relative to now; bound to the proof key if `bound`.
        func token(exp: Int64 = 3600, nbf: Int64? = nil, bound: Bool = false) throws -> String {
            let cnf = JSONObject(["jkt": .string(proofs.jkt)])
            return try testAccessToken(
                key: key, now: now, exp: exp, nbf: nbf, extra: bound ? ["cnf": .object(cnf)] : [:])
        }

        /// Asks the forward-auth endpoint about `GET https://api.example<path>`.
        func ask(_ path: String, _ fields: [(name: String, value: String)]) -> InMemoryTransport {
            askForwardAuth(worker, path, fields)
        }

        func bearer(_ token: String) -> InMemoryTransport {
            ask("/api/x", [("Authorization", "Bearer \(token)")])
        }

        /// A DPoP request with a proof made at `iat` (default: now).
        func dpop(
            _ token: String, path: String = "/pay/x", iat: Int64? = nil, nonce: String? = nil, proof: String? = nil
        )
            throws -> InMemoryTransport
        {
            let p = try proof ?? self.proof(token, path: path, iat: iat, nonce: nonce)
            return ask(path, [("Authorization", "DPoP \(token)"), ("DPoP", p)])
        }

        func proof(_ token: String, path: String = "/pay/x", iat: Int64? = nil, nonce: String? = nil) throws -> String {
            try proofs.proof(
                method: "GET", url: "https://api.example\(path)", accessToken: token, nonce: nonce, now: iat ?? now)
        }
    }

    static func challenge(_ t: InMemoryTransport) -> String { t.head?.fields.first("WWW-Authenticate") ?? "" }

    @Test func expiryHoldsForTheLeewayAndNoLonger() throws {
        let h = try Harness()
        let token = try h.token(exp: 60)
        #expect(h.bearer(token).status == 200)
        h.clock.advance(64)  // past exp, within the 5 s leeway (and not served from the cache past exp)
        #expect(h.bearer(token).status == 200)
        h.clock.advance(1)  // exp + leeway
        let late = h.bearer(token)
        #expect(late.status == 401)
        #expect(Self.challenge(late).contains("error=\"invalid_token\""))
        #expect(Self.challenge(late).contains("the token has expired"))
    }

    @Test func notBeforeHoldsUntilTheLeeway() throws {
        let h = try Harness()
        let token = try h.token(nbf: 10)
        let early = h.bearer(token)
        #expect(early.status == 401 && Self.challenge(early).contains("the token is not valid yet"))
        h.clock.advance(5)  // nbf − leeway
        #expect(h.bearer(token).status == 200)
    }

    @Test func verifiedTokensAreCachedForTheTTLOnly() throws {
        let h = try Harness()
        let token = try h.token()
        #expect(h.bearer(token).status == 200)
        #expect(h.worker.tokens.cacheMisses == 1 && h.worker.tokens.cacheHits == 0)
        h.clock.advance(119)
        #expect(h.bearer(token).status == 200)
        #expect(h.worker.tokens.cacheHits == 1, "within token_cache.ttl: from the cache")
        h.clock.advance(2)
        #expect(h.bearer(token).status == 200)
        #expect(h.worker.tokens.cacheMisses == 2 && h.worker.tokens.cacheHits == 1, "past the ttl: verified again")
    }

    @Test func aCachedTokenIsNotServedPastItsExpiry() throws {
        let h = try Harness()
        let token = try h.token(exp: 30)
        #expect(h.bearer(token).status == 200)
        h.clock.advance(36)  // within the cache's ttl, past exp + leeway
        #expect(h.bearer(token).status == 401)
        #expect(h.worker.tokens.cacheHits == 0)
    }

    @Test func proofIatWindowPlusLeeway() throws {
        let h = try Harness()
        let token = try h.token(bound: true)
        #expect(try h.dpop(token, iat: h.now - 65).status == 200)  // window 60 + leeway 5
        let old = try h.dpop(token, iat: h.now - 66)
        #expect(old.status == 401 && Self.challenge(old).contains("invalid_dpop_proof"))
        #expect(Self.challenge(old).contains("too old"))
        #expect(try h.dpop(token, iat: h.now + 65).status == 200)
        let future = try h.dpop(token, iat: h.now + 66)
        #expect(future.status == 401 && Self.challenge(future).contains("in the future"))
        // A proof made now and presented late: the same window, measured by the gateway's clock.
        let proof = try h.proof(token)
        h.clock.advance(66)
        let stale = try h.dpop(token, proof: proof)
        #expect(stale.status == 401 && Self.challenge(stale).contains("too old"))
    }

    @Test func aProofIsRefusedAgainForAsLongAsItWouldBeAccepted() throws {
        let h = try Harness()
        let token = try h.token(bound: true)
        let proof = try h.proof(token)
        #expect(try h.dpop(token, proof: proof).status == 200)
        h.clock.advance(30)
        let replayed = try h.dpop(token, proof: proof)
        #expect(replayed.status == 401 && Self.challenge(replayed).contains("has been used before"))
        h.clock.advance(35)  // iat + window + leeway: the last second the proof is acceptable
        #expect(try h.dpop(token, proof: proof).status == 401)
        h.clock.advance(1)
        // Past its window the replay entry may go: the proof is refused as too old, not replayed.
        let late = try h.dpop(token, proof: proof)
        #expect(late.status == 401 && Self.challenge(late).contains("too old"))
    }

    /// The nonce a 401 carries, read from its `DPoP-Nonce` header.
    static func nonce(_ t: InMemoryTransport) -> String? { t.head?.fields.first("DPoP-Nonce") }

    @Test func serverNoncesLiveForTheirLifetime() throws {
        let h = try Harness()
        let token = try h.token(exp: 3600, bound: true)
        let first = try h.dpop(token, path: "/nonced/x")
        #expect(first.status == 401 && Self.challenge(first).contains("use_dpop_nonce"))
        let nonce = try #require(Self.nonce(first))
        #expect(try h.dpop(token, path: "/nonced/x", nonce: nonce).status == 200)
        // nonce_lifetime 5m: a nonce is accepted for lifetime/2 to lifetime after it was issued.
        h.clock.advance(150)
        #expect(try h.dpop(token, path: "/nonced/x", nonce: nonce).status == 200)
        h.clock.advance(150)
        let expired = try h.dpop(token, path: "/nonced/x", nonce: nonce)
        #expect(expired.status == 401 && Self.challenge(expired).contains("use_dpop_nonce"))
        let fresh = try #require(Self.nonce(expired))
        #expect(fresh != nonce)
        #expect(try h.dpop(token, path: "/nonced/x", nonce: fresh).status == 200)
    }
}
