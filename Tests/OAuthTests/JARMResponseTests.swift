import JOSE
import Testing

@testable import OAuth

@Suite("JARM response JWTs: the state peeked for lookup, everything else verified")
struct JARMResponseTests {
    static let now: Int64 = 1_800_000_000
    static let issuer = "https://as.example"
    static let asKey = try! JWK.generate(for: .ES256, kid: "as-1")
    static let foreignKey = try! JWK.generate(for: .ES256, kid: "as-1")  // same kid, another key
    static let keys = JWKSet(keys: [asKey])

    static func claims(_ changes: [(String, JSONValue?)] = []) -> JSONObject {
        var c = JSONObject([
            "iss": .string(issuer), "aud": .string("app1"), "exp": .number(String(now + 600)),
            "code": .string("the-code"), "state": .string("st-1")
        ])
        for (k, v) in changes { c[k] = v }
        return c
    }

    static func jwt(_ claims: JSONObject, key: JWK = asKey, alg: JWSAlgorithm = .ES256) -> String {
        try! JWSSigner.sign(claims: claims, header: JSONObject(), alg: alg, key: key)
    }

    func verify(_ response: String) throws -> [(String, String)] {
        try JARMResponse.verify(
            response, issuer: Self.issuer, clientID: "app1", keys: Self.keys, algorithms: [.ES256], leeway: 30,
            now: Self.now)
    }

    func refusal(_ response: String) -> JOSEError.Code? {
        do {
            _ = try verify(response)
            return nil
        } catch let e as JOSEError {
            return e.code
        } catch {
            return .malformed
        }
    }

    @Test func aValidResponseGivesItsParametersWithIss() throws {
        let p = try verify(Self.jwt(Self.claims()))
        #expect(p.map(\.0) == ["iss", "code", "state"])
        let parsed = AuthorizationResponse.parse(parameters: p, expectedIssuer: Self.issuer, issRequired: true)
        #expect(parsed == .success(.code("the-code", state: "st-1")))
    }

    @Test func anAudienceArrayNamingTheClientIsAccepted() throws {
        let p = try verify(Self.jwt(Self.claims([("aud", .array([.string("other"), .string("app1")]))])))
        #expect(p.contains { $0 == ("code", "the-code") })
    }

    @Test func theStateIsPeekedWithoutVerifying() {
        #expect(JARMResponse.unverifiedState(Self.jwt(Self.claims(), key: Self.foreignKey)) == "st-1")
        #expect(JARMResponse.unverifiedState("not.a.jwt") == nil)
        #expect(JARMResponse.unverifiedState("a.b") == nil)
        #expect(JARMResponse.unverifiedState(Self.jwt(Self.claims([("state", .number("7"))]))) == nil)
    }

    @Test func issuerAudienceAndExpiryAreEnforced() {
        #expect(refusal(Self.jwt(Self.claims([("iss", .string("https://evil.example"))]))) == .issuerMismatch)
        #expect(refusal(Self.jwt(Self.claims([("iss", nil)]))) == .missingClaim)
        #expect(refusal(Self.jwt(Self.claims([("aud", .string("app2"))]))) == .audienceMismatch)
        #expect(refusal(Self.jwt(Self.claims([("aud", nil)]))) == .missingClaim)
        #expect(refusal(Self.jwt(Self.claims([("exp", .number(String(Self.now - 60)))]))) == .expired)
        #expect(refusal(Self.jwt(Self.claims([("exp", nil)]))) == .missingClaim)
    }

    @Test func signaturesAndAlgorithmsAreEnforced() {
        #expect(refusal(Self.jwt(Self.claims(), key: Self.foreignKey)) == .badSignature)
        let rsa = try! JWK.generate(for: .RS256, kid: "as-1")
        #expect(refusal(Self.jwt(Self.claims(), key: rsa, alg: .RS256)) == .algorithmNotAllowed)
        // alg none: a header and claims without a signature.
        let none =
            Base64URL.encode(#"{"alg":"none"}"#) + "."
            + Base64URL.encode(JSONSerializer.serialize(.object(Self.claims()))) + "."
        #expect(refusal(none) != nil)
        #expect(refusal("a.b.c.d.e") == .malformed)
    }

    @Test func nonStringParametersAreRefused() {
        #expect(refusal(Self.jwt(Self.claims([("code", .number("12"))]))) == .invalidClaim)
    }
}
