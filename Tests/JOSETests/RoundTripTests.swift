import Testing

@testable import JOSE

@Suite("Sign and verify round trips, key import and export")
struct RoundTripTests {
    static let asymmetric: [JWSAlgorithm] = [
        .RS256, .RS384, .RS512, .PS256, .PS384, .PS512, .ES256, .ES384, .ES512, .EdDSA
    ]

    @Test("generate, sign, verify, export, re-import", arguments: asymmetric + [.HS256, .HS384, .HS512])
    func roundTrip(_ alg: JWSAlgorithm) throws {
        let key = try JWK.generate(for: alg, kid: "k1")
        let token = try JWSSigner.sign(
            claims: JSONObject(["sub": .string("alice"), "exp": .number("9999999999")]), alg: alg, key: key)
        let set =
            alg.isSymmetric
            ? JWKSet(keys: [key])
            : try JWKSet(
                json: JSONSerializer.serialize(.object(JSONObject(["keys": .array([.object(key.publicJWK())])]))))
        let verified = try JWTVerifier(keys: set, algorithms: [alg], policy: JWTClaimsPolicy()).verify(
            token, now: 1_700_000_000)
        #expect(verified.claims["sub"] == .string("alice"))
        let reimported = try JWK(object: try key.privateJWK())
        #expect(reimported.thumbprint() == key.thumbprint())
        #expect(reimported.isPrivate)
    }
}
