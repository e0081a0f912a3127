public import JOSE

/// One issuer's rules for JWT access tokens (RFC 9068, RFC 8725).
public struct IssuerPolicy: Sendable {
    public var name: String
    /// The exact `iss` value.
    public var issuer: String
    public var algorithms: Set<JWSAlgorithm>
    public var audiences: [String]
    public var leeway: Int64
    /// e.g. "at+jwt" (RFC 9068 §2.1); nil accepts any typ.
    public var requiredType: String?
    public var maxTokenSize: Int
    /// The one claim its tokens (and introspection answers) carry scopes in.
    public var scopeClaim: ScopeClaim

    public init(
        name: String, issuer: String, algorithms: Set<JWSAlgorithm>, audiences: [String],
        leeway: Int64 = 30, requiredType: String? = nil, maxTokenSize: Int = CompactJWS.defaultMaxSize,
        scopeClaim: ScopeClaim = .scope
    ) {
        self.name = name
        self.issuer = issuer
        self.algorithms = algorithms
        self.audiences = audiences
        self.leeway = leeway
        self.requiredType = requiredType
        self.maxTokenSize = maxTokenSize
        self.scopeClaim = scopeClaim
    }
}

/// An access token that passed every check.
public struct VerifiedAccessToken: Sendable {
    public let issuer: String
    public let claims: JSONObject
    public let expiresAt: Int64
    /// RFC 9449 §6.1: the key the token is bound to, if it is DPoP-bound.
    public let jkt: String?
    /// The token has a `cnf` claim at all (RFC 7800): bound to a key — DPoP or another kind
    /// (mTLS `x5t#S256` …) — so it is never good as a plain Bearer token.
    public var isSenderConstrained = false
    /// Where its scopes are read from: its issuer's choice.
    public var scopeClaim: ScopeClaim = .scope
    public var subject: String? { claims["sub"]?.string }

    /// From the `cnf` claim or introspection member: `jkt` when it is a well-formed DPoP
    /// binding; any `cnf` at all makes the token sender-constrained.
    public init(issuer: String, claims: JSONObject, expiresAt: Int64, confirmation: JSONValue?) {
        self.issuer = issuer
        self.claims = claims
        self.expiresAt = expiresAt
        let jkt = confirmation?.object?["jkt"]?.string
        self.jkt = jkt.flatMap { $0.utf8.count == 43 && Base64URL.decode($0)?.count == 32 ? $0 : nil }
        isSenderConstrained = confirmation != nil
    }
    public var clientID: String? { claims["client_id"]?.string ?? claims["azp"]?.string }
}

/// JWT access-token validation for a route's issuers: the token's `iss` (read before
/// verification) picks exactly one configured issuer, whose keys and rules alone then
/// decide. Pure: keys and clock come in, a verdict goes out.
public struct AccessTokenVerifier: Sendable {
    public enum Failure: Error, Equatable, Sendable {
        /// Malformed or not a JWT at all (→ invalid_token; RFC 6750 §3.1).
        case malformed(String)
        /// `iss` is not one of the route's issuers.
        case unknownIssuer
        /// No key with the token's kid: the caller may refetch keys once, then retry.
        case unknownKey(issuer: String)
        /// Keys for the issuer are not loaded (yet).
        case keysUnavailable(issuer: String)
        case rejected(JOSEError)
    }

    public let issuers: [IssuerPolicy]

    public init(issuers: [IssuerPolicy]) { self.issuers = issuers }

    /// `keys(name)`: the current key set of the issuer with that config name.
    public func verify(_ token: String, now: Int64, keys: (String) -> JWKSet?) -> Result<VerifiedAccessToken, Failure> {
        let jws: CompactJWS
        let unverifiedClaims: JSONObject
        do {
            jws = try CompactJWS(token, maxSize: issuers.map(\.maxTokenSize).max() ?? CompactJWS.defaultMaxSize)
            unverifiedClaims = try jws.claims()
        } catch let e as JOSEError {
            return .failure(.malformed(e.description))
        } catch {
            return .failure(.malformed("not a JWT"))
        }
        guard let iss = unverifiedClaims["iss"]?.string, let policy = issuers.first(where: { $0.issuer == iss }) else {
            return .failure(.unknownIssuer)
        }
        guard let set = keys(policy.name) else { return .failure(.keysUnavailable(issuer: policy.name)) }
        var claimsPolicy = JWTClaimsPolicy(
            issuer: policy.issuer, audiences: policy.audiences, leeway: policy.leeway, type: policy.requiredType)
        claimsPolicy.requireExpiry = true
        do {
            try JWSVerifier(keys: set, algorithms: policy.algorithms).verify(jws)
            try claimsPolicy.validate(header: jws.header, claims: unverifiedClaims, now: now)
            if RFC9068Claims.isProfile(policy.requiredType) { try RFC9068Claims.validate(unverifiedClaims) }
        } catch let e as JOSEError {
            // Only a missing key is worth a refetch; a bad signature never is.
            if e.code == .keyNotFound && jws.header.kid != nil
                && !set.keys.contains(where: { $0.kid == jws.header.kid })
            {
                return .failure(.unknownKey(issuer: policy.name))
            }
            return .failure(.rejected(e))
        } catch {
            return .failure(.malformed("\(error)"))
        }
        var token = VerifiedAccessToken(
            issuer: policy.name, claims: unverifiedClaims,
            expiresAt: unverifiedClaims["exp"]?.int64 ?? now, confirmation: unverifiedClaims["cnf"])
        token.scopeClaim = policy.scopeClaim
        return .success(token)
    }
}
