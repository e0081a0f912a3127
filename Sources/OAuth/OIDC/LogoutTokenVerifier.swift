public import JOSE

/// Logout tokens of OpenID Connect Back-Channel Logout 1.0, validated per its §2.6: a JWT
/// signed by the issuer with an allowed algorithm (never `none`); `iss`, `aud` (the client),
/// `iat` (recent), `exp` when present; `jti` (the caller checks it was not seen before);
/// an `events` member holding the back-channel logout event; `sid` and/or `sub`; no `nonce`
/// (so an ID token can never pass as one); and, when typed, `logout+jwt` (§2.4) or plain `JWT`
/// (some providers type every token so) — never another type such as `at+jwt`.
public struct LogoutTokenVerifier: Sendable {
    public static let event = "http://schemas.openid.net/event/backchannel-logout"
    public let issuer: String
    public let clientID: String
    public let algorithms: Set<JWSAlgorithm>
    public var leeway: Int64 = 30
    /// Logout tokens older than this are refused (they are delivered at once).
    public var maxAge: Int64 = 300
    /// Other exact spellings of `iss` the issuer uses.
    public var aliases: [String] = []
    /// A multi-tenant issuer: `iss` is one of these filled with the token's own tenant claim.
    public var templates: [IssuerTemplate] = []

    public init(issuer: String, clientID: String, algorithms: Set<JWSAlgorithm>) {
        self.issuer = issuer
        self.clientID = clientID
        self.algorithms = algorithms
    }

    /// What a valid logout token ends: the AS session `sid`, every session of `sub`, or both.
    public struct LogoutToken: Sendable, Equatable {
        public let sid: String?
        public let sub: String?
        public let jti: String
        public let iat: Int64
    }

    public func verify(_ token: String, keys: JWKSet, now: Int64) throws -> LogoutToken {
        let jws = try CompactJWS(token)
        if let typ = jws.header.typ, !JWSHeader.typesMatch(typ, "logout+jwt") && !JWSHeader.typesMatch(typ, "JWT") {
            throw JOSEError(.typeMismatch, claim: "typ", "a logout token's typ is logout+jwt")
        }
        try JWSVerifier(keys: keys, algorithms: algorithms).verify(jws)
        let claims = try jws.claims()
        let exact = aliases.isEmpty && templates.isEmpty
        var policy = JWTClaimsPolicy(
            issuer: exact ? issuer : nil, audiences: [clientID], leeway: leeway, type: nil)
        policy.requireExpiry = false
        policy.requiredClaims = ["iat", "jti", "events"]
        policy.maxAge = maxAge
        try policy.validate(header: jws.header, claims: claims, now: now)
        if !exact {
            try IssuerTemplate.checkIssuer(claims, issuer: issuer, aliases: aliases, templates: templates)
        }
        guard let events = claims["events"]?.object, events[Self.event]?.object != nil else {
            throw JOSEError(.invalidClaim, claim: "events", "must hold the back-channel logout event")
        }
        guard claims["nonce"] == nil else {
            throw JOSEError(.invalidClaim, claim: "nonce", "a logout token has no nonce")
        }
        let sid = claims["sid"]?.string
        let sub = claims["sub"]?.string
        if claims["sid"] != nil && sid == nil { throw JOSEError(.invalidClaim, claim: "sid", "must be a string") }
        if claims["sub"] != nil && sub == nil { throw JOSEError(.invalidClaim, claim: "sub", "must be a string") }
        guard sid != nil || sub != nil else {
            throw JOSEError(.missingClaim, claim: "sid", "a logout token names a sid or a sub")
        }
        guard let jti = claims["jti"]?.string, !jti.isEmpty, let iat = claims["iat"]?.int64 else {
            throw JOSEError(.invalidClaim, claim: "jti", "must be a string")
        }
        return LogoutToken(sid: sid, sub: sub, jti: jti, iat: iat)
    }
}
