import JOSE
import Testing

@testable import Gateway

@Suite("IssuerKeyResolver: one refetch on an unknown key, written once for every verifier")
struct IssuerKeyResolverTests {
    @Test func anUnknownKeyIsRefetchedOnceThenTriedAgain() {
        let resolver = IssuerKeyResolver()
        var refetches: [String] = []
        resolver.requestRefetch = { issuer, done in
            refetches.append(issuer)
            done(JWKSet(keys: []))
        }
        var attempts = 0
        var outcome: Int?
        // Every attempt fails on a missing key: still only one refetch, and the last outcome wins.
        resolver.verify(
            { () -> Int in
                attempts += 1
                return attempts
            }, unknownKey: { _ in "as" }, done: { outcome = $0 })
        #expect(refetches == ["as"] && attempts == 2 && outcome == 2)
        #expect(resolver[issuer: "as"] != nil)
    }

    @Test func anyOtherOutcomeIsFinal() {
        let resolver = IssuerKeyResolver()
        var refetched = false
        resolver.requestRefetch = { _, done in
            refetched = true
            done(nil)
        }
        var outcome: String?
        resolver.verify({ "bad signature" }, unknownKey: { _ in nil }, done: { outcome = $0 })
        #expect(!refetched && outcome == "bad signature")
    }

    @Test func withoutAMainLoopToAskTheFirstOutcomeStands() {
        let resolver = IssuerKeyResolver()
        var outcome: Int?
        resolver.verify({ 1 }, unknownKey: { _ in "as" }, done: { outcome = $0 })
        #expect(outcome == 1)
    }

    @Test func aNewKeySetTellsItsOwner() {
        let resolver = IssuerKeyResolver()
        var updated: [String] = []
        resolver.onUpdate = { updated.append($0) }
        resolver.update("as", JWKSet(keys: []))
        #expect(updated == ["as"])
    }

    @Test func missingKeyIsOnlyKeyNotFound() {
        let check = IssuerKeyResolver.missingKey(of: "as") as (Result<Int, Error>) -> String?
        #expect(check(.failure(JOSEError(.keyNotFound, "no kid"))) == "as")
        #expect(check(.failure(JOSEError(.badSignature, "bad"))) == nil)
        #expect(check(.success(1)) == nil)
    }

    @Test func logoutTokenIDsHaveTheirOwnNamespace() {
        // The old derivation made up a DPoP key id: "logout\0" + issuer. A logout token's id can
        // no longer equal a proof's, whatever thumbprint and jti a client picks.
        let logout = ReplayID(logoutTokenOf: "https://as.example", jti: "j1")
        #expect(logout != ReplayID(jkt: "logout\u{0}https://as.example", jti: "j1"))
        #expect(logout == ReplayID(logoutTokenOf: "https://as.example", jti: "j1"))
        #expect(logout != ReplayID(logoutTokenOf: "https://other.example", jti: "j1"))
    }
}
