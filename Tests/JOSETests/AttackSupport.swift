import Foundation
import Testing

@testable import JOSE

/// Shared keys, clock and token forging for the attacker-side suites. Attack tokens are
/// built byte by byte (header and payload JSON given as text) so that what is sent is
/// exactly what an attacker would send, not what the signer would produce.
enum Attack {
    /// The fixed clock of every attack test (2023-11-14T22:13:20Z).
    static let now: Int64 = 1_700_000_000

    static let algorithms: [JWSAlgorithm] = [.RS256, .PS256, .ES256, .EdDSA, .HS256]

    /// One private key per algorithm under test, kid = the algorithm's name.
    static let keys: [JWSAlgorithm: JWK] = {
        var out: [JWSAlgorithm: JWK] = [:]
        for alg in algorithms + [.ES384] {
            do { out[alg] = try JWK.generate(for: alg, kid: alg.rawValue) } catch {
                preconditionFailure("key generation: \(error)")
            }
        }
        return out
    }()

    static func key(_ alg: JWSAlgorithm) -> JWK { keys[alg]! }

    /// The key set a verifier holds for `alg`: the public half (the secret itself for HMAC).
    static func verifierSet(_ alg: JWSAlgorithm) throws -> JWKSet {
        let k = key(alg)
        return alg.isSymmetric ? JWKSet(keys: [k]) : JWKSet(keys: [try JWK(object: k.publicJWK())])
    }

    /// A JWS whose header and payload are exactly the given texts, signed with `key`.
    static func forge(header: String, payload: String, alg: JWSAlgorithm, key: JWK) throws -> String {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try key.sign(alg, message: Array(input.utf8)))
    }

    /// A JWS signed with the test key for `alg`, kid in the header.
    static func token(_ alg: JWSAlgorithm, payload: String = #"{"sub":"alice","exp":1700003600}"#) throws -> String {
        try forge(
            header: #"{"alg":"\#(alg.rawValue)","kid":"\#(alg.rawValue)"}"#, payload: payload, alg: alg, key: key(alg))
    }

    /// Replaces one of the three dot-separated segments.
    static func replacing(segment index: Int, of token: String, with transform: (String) -> String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = transform(parts[index])
        return parts.joined(separator: ".")
    }

    static func segment(_ index: Int, of token: String) -> String {
        String(token.split(separator: ".", omittingEmptySubsequences: false)[index])
    }
}

/// Runs `body`, which must throw a `JOSEError` with exactly `code` (not just "throw").
@discardableResult
func expectJOSEError(
    _ code: JOSEError.Code, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> JOSEError? {
    let error = #expect(throws: JOSEError.self, comment, sourceLocation: sourceLocation) { try body() }
    #expect(
        error?.code == code, "expected \(code), got \(error.map { "\($0)" } ?? "no error")",
        sourceLocation: sourceLocation)
    return error
}
