public import JOSE

/// RFC 9701: an introspection response as a JWT the AS signs, which a resource server asks for
/// with `Accept: application/token-introspection+jwt` — the answer then cannot be forged or
/// changed on its way (by a proxy, a compromised network) as a plain JSON answer could.
public enum SignedIntrospectionResponse {
    public static let mediaType = "application/token-introspection+jwt"
    /// §5: the JWT's `typ`.
    static let type = "token-introspection+jwt"
    /// An answer signed longer ago than this is not taken (a replayed one).
    static let maxAge: Int64 = 300

    /// The RFC 7662 JSON inside a response that verifies, or why it does not (§6): a JWT
    /// signed with one of the AS's keys in an algorithm it may use, `typ`
    /// token-introspection+jwt, `iss` the AS, `aud` this resource server (its client_id),
    /// `iat` recent, and a `token_introspection` object.
    public static func unwrap(
        _ body: [UInt8], issuer: String, audience: String, keys: JWKSet, algorithms: Set<JWSAlgorithm>,
        leeway: Int64, now: Int64
    ) -> Result<[UInt8], JOSEError> {
        do {
            let jws = try CompactJWS(String(decoding: body, as: UTF8.self).trimmingASCIIWhitespace)
            try JWSVerifier(keys: keys, algorithms: algorithms).verify(jws)
            let claims = try jws.claims()
            var policy = JWTClaimsPolicy(issuer: issuer, audiences: [audience], leeway: leeway, type: type)
            policy.requiredClaims = ["iat"]
            policy.requireExpiry = false  // §5: exp is optional; iat bounds the age
            policy.maxAge = maxAge
            try policy.validate(header: jws.header, claims: claims, now: now)
            guard case .object(let inner)? = claims["token_introspection"] else {
                throw JOSEError(.missingClaim, claim: "token_introspection", "is required")
            }
            return .success(Array(JSONSerializer.serialize(.object(inner)).utf8))
        } catch let error as JOSEError {
            return .failure(error)
        } catch {
            return .failure(JOSEError(.malformed, "\(error)"))
        }
    }
}

extension String {
    /// Without leading and trailing ASCII whitespace (a body may end in a newline).
    fileprivate var trimmingASCIIWhitespace: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\n" || c == "\r" || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\n" || c == "\r" || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
