public import JOSE

/// An Identity Assertion JWT Authorization Grant (ID-JAG, draft-ietf-oauth-identity-assertion-
/// authz-grant): a JWT the user's IdP issued for this AS, presented at its token endpoint
/// with the jwt-bearer grant (RFC 7523) in place of a login and consent. Checked as the draft
/// and the issue say: `typ` `oauth-id-jag+jwt`; signed by the issuer's keys with an algorithm
/// it allows; `iss` one of the accepted issuers; `aud` this AS; `resource` one of its
/// resources; `client_id` the client that authenticated; `sub`, `jti`, `iat` and `exp`
/// present, the life short, `iat` not ahead.
public struct IdentityAssertionGrant: Sendable {
    public let issuer: String
    public let subject: String
    public let clientID: String
    public let resource: String
    /// The scopes the IdP granted (the AS grants at most these, and at most the user's).
    public let scopes: [String]
    public let jti: String
    public let expiresAt: Int64
    public let claims: JSONObject

    public static let type = "oauth-id-jag+jwt"
    /// The longest life accepted: an assertion is for one exchange, now.
    public static let maxLifetime: Int64 = 600

    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// What the checks need: the AS's own issuer, its resources, the client that
    /// authenticated, and for each accepted issuer (by its `iss`) its keys and algorithms.
    public struct Expectations: Sendable {
        public var asIssuer: String
        public var resources: Set<String>
        public var clientID: String
        public var issuers: [String: (keys: JWKSet, algorithms: Set<JWSAlgorithm>)]
        public var leeway: Int64 = 30

        public init(
            asIssuer: String, resources: Set<String>, clientID: String,
            issuers: [String: (keys: JWKSet, algorithms: Set<JWSAlgorithm>)]
        ) {
            self.asIssuer = asIssuer
            self.resources = resources
            self.clientID = clientID
            self.issuers = issuers
        }
    }

    public init(_ assertion: String, expecting e: Expectations, now: Int64) throws(Refusal) {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(assertion, maxSize: 16 * 1024)
        } catch {
            throw Refusal("the assertion is not a signed JWT")
        }
        guard let typ = jws.header.typ, JWSHeader.typesMatch(typ, Self.type) else {
            throw Refusal("the assertion's typ is not \(Self.type)")
        }
        // The issuer is read before the signature only to pick its keys; nothing else is.
        let unverified: JSONObject
        do { unverified = try jws.claims() } catch { throw Refusal("the assertion's claims are not a JSON object") }
        guard let iss = unverified["iss"]?.string, let trust = e.issuers[iss] else {
            throw Refusal("the assertion's issuer is not one this AS accepts")
        }
        do {
            try JWSVerifier(keys: trust.keys, algorithms: trust.algorithms.filter { !$0.isSymmetric }).verify(jws)
        } catch {
            throw Refusal("the assertion's signature does not verify with its issuer's keys")
        }
        let c = unverified
        let audiences: [String] =
            switch c["aud"] {
            case .string(let s): [s]
            case .array(let a): a.compactMap(\.string)
            default: []
            }
        guard audiences.contains(e.asIssuer) else { throw Refusal("the assertion's aud is not this AS") }
        guard let resource = c["resource"]?.string, e.resources.contains(resource) else {
            throw Refusal("the assertion's resource is not one of this AS's resources")
        }
        guard c["client_id"]?.string == e.clientID else {
            throw Refusal("the assertion's client_id is not the client that authenticated")
        }
        guard let sub = c["sub"]?.string, !sub.isEmpty, sub.utf8.count <= 255 else {
            throw Refusal("the assertion needs a sub")
        }
        guard let jti = c["jti"]?.string, !jti.isEmpty, jti.utf8.count <= 255 else {
            throw Refusal("the assertion needs a jti")
        }
        guard let iat = c["iat"]?.int64, let exp = c["exp"]?.int64, NumericDate.admits(iat), NumericDate.admits(exp)
        else { throw Refusal("the assertion needs iat and exp") }
        guard exp > now - e.leeway else { throw Refusal("the assertion has expired") }
        guard iat <= now + e.leeway else { throw Refusal("the assertion was issued in the future") }
        guard exp > iat, exp - iat <= Self.maxLifetime else {
            throw Refusal("the assertion lives longer than \(Self.maxLifetime) s")
        }
        issuer = iss
        subject = sub
        clientID = e.clientID
        self.resource = resource
        scopes = (c["scope"]?.string ?? "").split(separator: " ").map(String.init)
        self.jti = jti
        expiresAt = exp
        claims = c
    }
}
