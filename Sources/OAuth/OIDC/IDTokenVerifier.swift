public import JOSE

/// ID token validation, OpenID Connect Core 1.0 §3.1.3.7 (and §3.1.3.8 for `at_hash`), as a
/// policy value: keys, clock and the pending login's nonce come in, verified claims go out.
public struct IDTokenVerifier: Sendable {
    public let issuer: String
    public let clientID: String
    public let algorithms: Set<JWSAlgorithm>
    public var leeway: Int64 = 30
    /// Tokens issued longer ago than this are refused (§3.1.3.7 step 10's "too far away").
    public var maxAge: Int64 = 600
    /// Other exact spellings of `iss` the issuer uses.
    public var aliases: [String] = []
    /// A multi-tenant issuer: `iss` is one of these filled with the token's own tenant claim.
    public var templates: [IssuerTemplate] = []

    public init(issuer: String, clientID: String, algorithms: Set<JWSAlgorithm>) {
        self.issuer = issuer
        self.clientID = clientID
        self.algorithms = algorithms
    }

    /// - nonce: the value sent in the authorization request (step 11); nil for a refresh,
    ///   where OIDC Core §12.2 has the new ID token carry no nonce or the original one.
    /// - accessToken: checked against `at_hash` when the token has one (§3.1.3.8).
    public func verify(_ idToken: String, keys: JWKSet, nonce: String?, accessToken: String?, now: Int64) throws
        -> JSONObject
    {
        let jws = try CompactJWS(idToken)
        // Steps 6–8: signature with the AS's keys, an algorithm it may use.
        try JWSVerifier(keys: keys, algorithms: algorithms).verify(jws)
        let claims = try jws.claims()
        let exact = aliases.isEmpty && templates.isEmpty
        var policy = JWTClaimsPolicy(
            issuer: exact ? issuer : nil, audiences: [clientID], leeway: leeway, type: nil)
        policy.requireExpiry = true
        policy.requiredClaims = ["sub", "iat"]
        policy.maxAge = maxAge
        // Steps 2–3, 9–10: iss exact, aud contains client_id, exp, iat (not too old).
        try policy.validate(header: jws.header, claims: claims, now: now)
        if !exact {
            try IssuerTemplate.checkIssuer(claims, issuer: issuer, aliases: aliases, templates: templates)
        }
        // Steps 4–5: with several audiences, azp must be present and be this client.
        let audiences = claims["aud"]?.array?.compactMap(\.string) ?? []
        if audiences.count > 1 || claims["azp"] != nil {
            guard claims["azp"]?.string == clientID else {
                throw JOSEError(.audienceMismatch, claim: "azp", "must be this client")
            }
        }
        // Step 11: nonce as sent.
        if let nonce {
            guard let got = claims["nonce"]?.string, ConstantTime.equals(Array(got.utf8), Array(nonce.utf8)) else {
                throw JOSEError(.invalidClaim, claim: "nonce", "does not match the authorization request")
            }
        } else if let got = claims["nonce"], got.string == nil {
            throw JOSEError(.invalidClaim, claim: "nonce", "must be a string")
        }
        // §3.1.3.8: at_hash = left half of the hash of the access token, by the alg's hash.
        if let atHash = claims["at_hash"], let accessToken {
            // The alg's hash; for EdDSA with Ed25519, SHA-512 (OpenID Connect's resolution for
            // algorithms without one in their name).
            guard let digest = jws.header.alg.digest ?? (jws.header.alg == .EdDSA ? .sha512 : nil) else {
                throw JOSEError(.invalidClaim, claim: "at_hash", "no hash for this alg")
            }
            let full = digest.hash(Array(accessToken.utf8))
            let expected = Base64URL.encode(Array(full.prefix(full.count / 2)))
            guard atHash.string == expected else {
                throw JOSEError(.invalidClaim, claim: "at_hash", "does not match the access token")
            }
        }
        return claims
    }
}
