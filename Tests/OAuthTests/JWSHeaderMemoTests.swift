import Foundation
import Testing

@testable import JOSE
@testable import OAuth

/// The per-loop memo of access tokens' protected headers (`JWSHeaderMemo`): a header seen
/// before, byte for byte, is not decoded, parsed and checked again — and nothing else about
/// a token is taken on trust. Each attack first puts a good token's header in the memo, then
/// sends a token that breaks a rule (with that header, or one close to it) and expects exactly
/// that rule's refusal.
@Suite("Access tokens: the protected-header memo")
struct JWSHeaderMemoTests {
    typealias T = AccessTokenTests

    func keys(_ name: String) -> JWKSet? { JWKSet(keys: [T.corpKey, Self.secondKey]) }
    static let secondKey = try! JWK.generate(for: .ES256, kid: "corp-2")

    /// A memo holding the header of `T.corpKey`'s tokens, from one accepted token.
    func warmMemo() throws -> JWSHeaderMemo {
        let memo = JWSHeaderMemo()
        _ = try T.verifier.verify(T.token(T.claims()), now: T.now, keys: keys, headerMemo: memo).get()
        #expect(memo.hits == 0)
        return memo
    }

    func refusal(_ token: String, memo: JWSHeaderMemo) -> AccessTokenVerifier.Failure? {
        switch T.verifier.verify(token, now: T.now, keys: keys, headerMemo: memo) {
        case .success: return nil
        case .failure(let f): return f
        }
    }

    /// A JWS of exactly these header and payload texts, signed by `key`.
    func forge(header: String, claims: JSONObject, key: JWK = T.corpKey) throws -> String {
        let payload = JSONSerializer.serialize(.object(claims))
        let input = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try key.sign(.ES256, message: Array(input.utf8)))
    }

    @Test func theSameHeaderIsTakenFromTheMemoAndGivesTheSameVerdict() throws {
        let memo = try warmMemo()
        let second = try T.verifier.verify(
            T.token(T.claims(extra: [("sub", .string("bob"))])), now: T.now, keys: keys, headerMemo: memo
        ).get()
        #expect(memo.hits == 1)
        #expect(second.subject == "bob" && second.issuer == "corp")
    }

    @Test func aMemoizedHeaderStillNeedsAGoodSignature() throws {
        let memo = try warmMemo()
        // The same header bytes with another payload under the first token's signature.
        let good = T.token(T.claims())
        let parts = good.split(separator: ".")
        let other = Base64URL.encode(JSONSerializer.serialize(.object(T.claims(extra: [("sub", .string("root"))]))))
        guard case .rejected(let e) = refusal("\(parts[0]).\(other).\(parts[2])", memo: memo) else {
            Issue.record("a forged payload under a memoized header was not refused as a bad signature")
            return
        }
        #expect(e.code == .badSignature)
        #expect(memo.hits == 1)
        // The same header, signed by a key the issuer does not have under that kid.
        let stranger = try JWK.generate(for: .ES256, kid: "corp-1")
        guard case .rejected(let e2) = refusal(T.token(T.claims(), key: stranger), memo: memo) else {
            Issue.record("a token signed by a stranger's key was accepted")
            return
        }
        #expect(e2.code == .badSignature)
    }

    @Test func aMemoizedHeaderStillMeetsTheClaimRules() throws {
        let memo = try warmMemo()
        let expired = T.claims(extra: [("exp", .number(String(T.now - 3600)))])
        guard case .rejected(let e) = refusal(T.token(expired), memo: memo) else {
            Issue.record("an expired token with a memoized header was accepted")
            return
        }
        #expect(e.code == .expired)
        #expect(memo.hits == 1)
    }

    @Test func aHeaderThatFailsItsChecksIsNeverMemoized() throws {
        let memo = JWSHeaderMemo()
        // An unknown critical extension (RFC 7515 §4.1.11), then `alg: none`, each sent twice.
        let crit = try forge(
            header: #"{"alg":"ES256","typ":"at+jwt","kid":"corp-1","crit":["x"],"x":1}"#, claims: T.claims())
        let none =
            Base64URL.encode(#"{"alg":"none","typ":"at+jwt"}"#) + "."
            + Base64URL.encode(JSONSerializer.serialize(.object(T.claims()))) + "."
        for _ in 0..<2 {
            guard case .malformed = refusal(crit, memo: memo) else {
                Issue.record("a header with an unknown critical extension was not refused")
                return
            }
            #expect(refusal(none, memo: memo) != nil)
        }
        #expect(memo.hits == 0)
    }

    @Test func aHeaderOfTheSameLengthButOtherBytesIsParsedAnew() throws {
        let memo = try warmMemo()
        // "corp-2" against "corp-1": the same length, one byte apart; the kid picks the key.
        let token = T.token(T.claims(), key: Self.secondKey)
        let verified = try T.verifier.verify(token, now: T.now, keys: keys, headerMemo: memo).get()
        #expect(verified.issuer == "corp")
        #expect(memo.hits == 0)
        // Signed by corp-1's key but naming corp-2: refused, whichever header is memoized.
        let header = #"{"typ":"at+jwt","alg":"ES256","kid":"corp-2"}"#
        let lying = try forge(header: header, claims: T.claims(), key: T.corpKey)
        guard case .rejected(let e) = refusal(lying, memo: memo) else {
            Issue.record("a token naming another kid than its signer was accepted")
            return
        }
        #expect(e.code == .badSignature)
    }

    @Test func moreHeadersThanSlotsStillVerifyEachByItsOwnKid() throws {
        let memo = JWSHeaderMemo()
        var set: [JWK] = []
        for i in 0..<(JWSHeaderMemo.slots + 2) { set.append(try JWK.generate(for: .ES256, kid: "k\(i)")) }
        let verifier = AccessTokenVerifier(issuers: [
            IssuerPolicy(name: "corp", issuer: "https://idp.corp", algorithms: [.ES256], audiences: ["api"])
        ])
        for round in 0..<2 {
            for (i, key) in set.enumerated() {
                let token = T.token(T.claims(extra: [("sub", .string("u\(i)"))]), key: key)
                let r = try verifier.verify(
                    token, now: T.now, keys: { _ in JWKSet(keys: set) }, headerMemo: memo
                ).get()
                #expect(r.subject == "u\(i)", "round \(round)")
                // Another key's signature under this key's header never passes.
                let j = (i + 1) % set.count
                let forged = try forge(
                    header: #"{"typ":"at+jwt","alg":"ES256","kid":"k\#(i)"}"#, claims: T.claims(), key: set[j])
                guard
                    case .failure(.rejected(let e)) = verifier.verify(
                        forged, now: T.now, keys: { _ in JWKSet(keys: set) }, headerMemo: memo)
                else {
                    Issue.record("kid k\(i) signed by k\(j) was accepted")
                    return
                }
                #expect(e.code == .badSignature)
            }
        }
        // Twelve headers through four slots, round robin: the latest is kept and found.
        let last = T.token(T.claims(), key: set[set.count - 1])
        _ = try verifier.verify(last, now: T.now, keys: { _ in JWKSet(keys: set) }, headerMemo: memo).get()
        let before = memo.hits
        _ = try verifier.verify(last, now: T.now, keys: { _ in JWKSet(keys: set) }, headerMemo: memo).get()
        #expect(memo.hits == before + 1)
    }
}
