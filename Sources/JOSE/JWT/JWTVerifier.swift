/// A JWT that passed signature and claims checks.
public struct VerifiedJWT: Sendable {
    public let header: JWSHeader
    public let claims: JSONObject
    public let key: JWK
}

/// Parse + select key + verify signature + claims policy, in that order, for one issuer's
/// key set and algorithm allow-list (RFC 8725 §3.1: the algorithm is never taken from the
/// token alone).
public struct JWTVerifier: Sendable {
    public let verifier: JWSVerifier
    public let policy: JWTClaimsPolicy
    public let maxSize: Int

    public init(
        keys: JWKSet, algorithms: Set<JWSAlgorithm>, policy: JWTClaimsPolicy, maxSize: Int = CompactJWS.defaultMaxSize
    ) {
        verifier = JWSVerifier(keys: keys, algorithms: algorithms)
        self.policy = policy
        self.maxSize = maxSize
    }

    public func verify(_ token: String, now: Int64) throws -> VerifiedJWT {
        let jws = try CompactJWS(token, maxSize: maxSize)
        let key = try verifier.verify(jws)
        let claims = try jws.claims()
        try policy.validate(header: jws.header, claims: claims, now: now)
        return VerifiedJWT(header: jws.header, claims: claims, key: key)
    }
}
