public import JOSE

/// JWT Secured Authorization Response Mode (JARM; OpenID FAPI 2.0 Message Signing §5.4): the
/// authorization response's parameters arrive as the claims of one JWT the AS signs, in the
/// `response` parameter (`response_mode=jwt`, for the code flow the query). The signature ties
/// `code` and `state` to the AS and to this client, so a response injected or changed in the
/// browser is refused before its code is spent.
public enum JARMResponse {
    /// The claims that frame the response (JARM §2.1) rather than carry its parameters.
    static let framing: Set<String> = ["aud", "exp", "iat", "nbf", "jti"]

    /// The `state` claim, read without verifying anything: only to find the pending login,
    /// whose client says which keys and audience the verification then needs. Nil for anything
    /// that is not a three-part JWT with a string `state`.
    public static func unverifiedState(_ response: String) -> String? {
        let parts = response.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, response.utf8.count <= CompactJWS.defaultMaxSize,
            let payload = Base64URL.decode(parts[1]),
            let claims = try? JSONParser.parseObject(payload, what: "the response JWT")
        else { return nil }
        return claims["state"]?.string
    }

    /// The authorization response's parameters from a response JWT that verifies (JARM §2.4):
    /// signed by one of the AS's `keys` in an algorithm the issuer may use (never `none`), `iss`
    /// the AS, `aud` containing this client's id, and not expired (`exp` required). An
    /// encrypted response (five parts) is refused: this client registers no encryption key.
    /// `iss` stays among the parameters, so RFC 9207's check applies unchanged.
    public static func verify(
        _ response: String, issuer: String, clientID: String, keys: JWKSet, algorithms: Set<JWSAlgorithm>,
        leeway: Int64, now: Int64
    ) throws -> [(String, String)] {
        if response.split(separator: ".", omittingEmptySubsequences: false).count == 5 {
            throw JOSEError(.malformed, "an encrypted response JWT is not accepted")
        }
        let jws = try CompactJWS(response)
        try JWSVerifier(keys: keys, algorithms: algorithms).verify(jws)
        let claims = try jws.claims()
        let policy = JWTClaimsPolicy(issuer: issuer, audiences: [clientID], leeway: leeway, type: nil)
        try policy.validate(header: jws.header, claims: claims, now: now)
        var parameters: [(String, String)] = []
        for name in claims.names where !framing.contains(name) {
            // Every authorization response parameter is a string (RFC 6749 §4.1.2, §4.1.2.1).
            guard let s = claims[name]?.string else {
                throw JOSEError(.invalidClaim, claim: name, "an authorization response parameter must be a string")
            }
            parameters.append((name, s))
        }
        return parameters
    }
}
