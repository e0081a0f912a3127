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
        try forge(segment: Base64URL.encode(header), claims: claims, key: key)
    }

    /// A JWS whose header is exactly this base64url segment (e.g. one a real token carries,
    /// so that it meets the memo), signed by `key`.
    func forge(segment: String, claims: JSONObject, key: JWK = T.corpKey) throws -> String {
        let input = segment + "." + Base64URL.encode(JSONSerializer.serialize(.object(claims)))
        return input + "." + Base64URL.encode(try key.sign(.ES256, message: Array(input.utf8)))
    }

    /// The header segment the signer writes for `key`'s tokens (what the memo is keyed by).
    func segment(of key: JWK) -> String { String(T.token(T.claims(), key: key).split(separator: ".")[0]) }

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

    @Test func onlyTheHeadersOfAcceptedTokensAreKept() throws {
        let memo = JWSHeaderMemo()
        // A well-formed header on tokens that are refused (a stranger's signature, then the
        // wrong typ): never kept, so made-up headers cannot push an issuer's out of the memo.
        let stranger = try JWK.generate(for: .ES256, kid: "corp-2")
        let wrongTyp = T.token(T.claims(), key: Self.secondKey, typ: "JWT")
        for _ in 0..<2 {
            guard case .rejected(let e) = refusal(T.token(T.claims(), key: stranger), memo: memo) else {
                Issue.record("a stranger's signature was accepted")
                return
            }
            #expect(e.code == .badSignature)
            guard case .rejected(let t) = refusal(wrongTyp, memo: memo) else {
                Issue.record("a token typed JWT was accepted as an access token")
                return
            }
            #expect(t.code == .typeMismatch)
        }
        #expect(memo.hits == 0)
        // The same header on an accepted token is kept, and found on the next one.
        _ = try T.verifier.verify(T.token(T.claims(), key: Self.secondKey), now: T.now, keys: keys, headerMemo: memo)
            .get()
        #expect(memo.hits == 0)
        _ = try T.verifier.verify(T.token(T.claims(), key: Self.secondKey), now: T.now, keys: keys, headerMemo: memo)
            .get()
        #expect(memo.hits == 1)
    }

    @Test func aMemoizedHeaderStillMeetsEachIssuersAlgorithmsAndType() throws {
        let memo = try warmMemo()
        // The same header bytes (ES256, at+jwt) before an issuer that allows RS256 only,
        // then before one that requires another typ.
        let rules: [(Set<JWSAlgorithm>, String, JOSEError.Code)] = [
            ([.RS256], "at+jwt", .algorithmNotAllowed), ([.ES256], "application/other+jwt", .typeMismatch)
        ]
        for (n, (algorithms, type, code)) in rules.enumerated() {
            let verifier = AccessTokenVerifier(issuers: [
                IssuerPolicy(
                    name: "corp", issuer: "https://idp.corp", algorithms: algorithms, audiences: ["api"],
                    requiredType: type)
            ])
            guard
                case .failure(.rejected(let e)) = verifier.verify(
                    T.token(T.claims()), now: T.now, keys: keys, headerMemo: memo)
            else {
                Issue.record("accepted through the memo by an issuer whose rules it breaks (\(code))")
                return
            }
            #expect(e.code == code)
            #expect(memo.hits == n + 1)
        }
    }

    @Test func aHeaderOfTheSameLengthButOtherBytesIsParsedAnew() throws {
        let memo = try warmMemo()
        // "corp-2" against "corp-1": the same length, one byte apart; the kid picks the key.
        let token = T.token(T.claims(), key: Self.secondKey)
        let verified = try T.verifier.verify(token, now: T.now, keys: keys, headerMemo: memo).get()
        #expect(verified.issuer == "corp")
        #expect(memo.hits == 0)
        // Both headers are kept now. corp-2's exact header, signed by corp-1's key: the memo
        // finds the header, and corp-2's key refuses the signature.
        let lying = try forge(segment: segment(of: Self.secondKey), claims: T.claims(), key: T.corpKey)
        guard case .rejected(let e) = refusal(lying, memo: memo) else {
            Issue.record("a token naming another kid than its signer was accepted")
            return
        }
        #expect(e.code == .badSignature)
        #expect(memo.hits == 1)
    }

    @Test func moreHeadersThanSlotsStillVerifyEachByItsOwnKid() throws {
        let memo = JWSHeaderMemo()
        var set: [JWK] = []
        for i in 0..<(JWSHeaderMemo.slots + 2) { set.append(try JWK.generate(for: .ES256, kid: "k\(i)")) }
        let verifier = AccessTokenVerifier(issuers: [
            IssuerPolicy(name: "corp", issuer: "https://idp.corp", algorithms: [.ES256], audiences: ["api"])
        ])
        func verify(_ token: String) -> Result<VerifiedAccessToken, AccessTokenVerifier.Failure> {
            verifier.verify(token, now: T.now, keys: { _ in JWKSet(keys: set) }, headerMemo: memo)
        }
        for round in 0..<2 {
            for (i, key) in set.enumerated() {
                let r = try verify(T.token(T.claims(extra: [("sub", .string("u\(i)"))]), key: key)).get()
                #expect(r.subject == "u\(i)", "round \(round)")
                // The next key's signature under this key's exact header (just kept): refused.
                let j = (i + 1) % set.count
                let hits = memo.hits
                guard
                    case .failure(.rejected(let e)) = verify(
                        try forge(segment: segment(of: key), claims: T.claims(), key: set[j]))
                else {
                    Issue.record("kid k\(i) signed by k\(j) was accepted")
                    return
                }
                #expect(e.code == .badSignature)
                #expect(memo.hits == hits + 1, "the forged token met k\(i)'s memoized header")
            }
        }
    }
}
