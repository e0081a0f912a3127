public import JOSE

/// A client's `private_key_jwt` authentication at this AS's token endpoint (RFC 7523 §3, OIDC
/// Core §9): a JWT the client signed with a key its metadata document gives, `iss` and `sub`
/// its `client_id`, a `jti`, a short life, and `aud` this AS's issuer as a single string
/// (draft-ietf-oauth-rfc7523bis): an MCP client discovers authorization servers as it goes,
/// and one that names this token endpoint in its own metadata would otherwise get an
/// assertion it could replay here.
public struct PresentedClientAssertion: Sendable {
    public let clientID: String
    public let jti: String
    public let expiresAt: Int64

    public static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    /// What a client may sign its assertion with: asymmetric algorithms only (its keys are
    /// published), as the metadata's `token_endpoint_auth_signing_alg_values_supported` says.
    public static let algorithms = JWSAlgorithm.allCases.filter { !$0.isSymmetric }.map(\.rawValue)
    /// The longest life accepted: an assertion is made for one request.
    public static let maxLifetime: Int64 = 300

    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The `iss` of an assertion before anything of it is trusted: which client's keys to
    /// fetch. Nothing else is read from it unverified.
    public static func claimedClient(_ assertion: String) -> String? {
        guard let jws = try? CompactJWS(assertion, maxSize: 8 * 1024), let claims = try? jws.claims(),
            let iss = claims["iss"]?.string, claims["sub"]?.string == iss
        else { return nil }
        return iss
    }

    /// `issuer`: the AS's issuer, the one `aud` there may be.
    public init(
        _ assertion: String, clientID: String, keys: JWKSet, issuer: String, now: Int64, leeway: Int64 = 30
    ) throws(Refusal) {
        let jws: CompactJWS
        do { jws = try CompactJWS(assertion, maxSize: 8 * 1024) } catch {
            throw Refusal("the client assertion is not a signed JWT")
        }
        do {
            // Asymmetric only: the keys are public, from a public document.
            try JWSVerifier(keys: keys, algorithms: Set(JWSAlgorithm.allCases.filter { !$0.isSymmetric }))
                .verify(jws)
        } catch {
            throw Refusal("the client assertion's signature does not verify with the client's keys")
        }
        let c: JSONObject
        do { c = try jws.claims() } catch { throw Refusal("the client assertion's claims are not a JSON object") }
        guard c["iss"]?.string == clientID, c["sub"]?.string == clientID else {
            throw Refusal("the client assertion's iss and sub are not the client_id")
        }
        guard c["aud"] == .string(issuer) else {
            throw Refusal("the client assertion's aud must be this AS's issuer, alone")
        }
        guard let jti = c["jti"]?.string, !jti.isEmpty, jti.utf8.count <= 255 else {
            throw Refusal("the client assertion needs a jti")
        }
        guard let exp = c["exp"]?.int64, NumericDate.admits(exp), exp > now - leeway else {
            throw Refusal("the client assertion has expired, or has no exp")
        }
        let iat = c["iat"]?.int64 ?? now
        guard iat <= now + leeway, exp - min(iat, now) <= Self.maxLifetime + leeway else {
            throw Refusal("the client assertion lives longer than \(Self.maxLifetime) s or was issued in the future")
        }
        self.clientID = clientID
        self.jti = jti
        expiresAt = exp
    }
}
