public import JOSE

/// An access token this gateway's authorization server issues (RFC 9068): a JWT typed
/// `at+jwt`, for one resource (`aud`), naming the user as their IdP does (`sub`, with the
/// IdP's issuer in `idp_iss`: two IdPs' `sub`s never meet), the client by its metadata
/// document URL, the scopes granted, a short life, and, for a DPoP-bound token, the key's
/// thumbprint (RFC 9449 §6.1, `cnf.jkt`).
public struct IssuedAccessToken: Sendable {
    public let token: String
    public let jti: String
    public let expiresAt: Int64
    public let clientID: String
    /// Bound to a DPoP key (`cnf.jkt`): its `token_type` is `DPoP`.
    public let isBound: Bool

    public struct Grant: Sendable {
        public var issuer: String
        public var subject: String
        public var idpIssuer: String
        public var clientID: String
        public var resource: String
        public var scopes: [String]
        public var jkt: String?
        /// The grant it came from (`sid`): a code used twice, or a refresh token reused, ends
        /// every token of its grant by it.
        public var grantID: String?
        /// Claims the IdP vouched for that the resource's routes map to headers (`email`, …).
        public var extraClaims: JSONObject

        public init(
            issuer: String, subject: String, idpIssuer: String, clientID: String, resource: String,
            scopes: [String], jkt: String? = nil, grantID: String? = nil, extraClaims: JSONObject = JSONObject()
        ) {
            self.grantID = grantID
            self.issuer = issuer
            self.subject = subject
            self.idpIssuer = idpIssuer
            self.clientID = clientID
            self.resource = resource
            self.scopes = scopes
            self.jkt = jkt
            self.extraClaims = extraClaims
        }
    }

    /// The IdP's claims about the user a token carries beside its own (routes map them to
    /// headers).
    public static let identityClaims = ["email", "name", "groups"]

    /// The claims RFC 9068 §2.2 names are the AS's own: an IdP claim under one of these names
    /// never overrides them.
    static let reserved: Set<String> = [
        "iss", "sub", "aud", "exp", "iat", "nbf", "jti", "client_id", "scope", "cnf", "idp_iss", "auth_time", "acr",
        "amr", "sid"
    ]

    /// `kid`: the key's name in the AS's JWKS (its own `kid` when nil).
    public init(_ g: Grant, lifetime: Int64, now: Int64, key: JWK, alg: JWSAlgorithm, kid: String? = nil) throws {
        let jti = Base64URL.encode(SecureRandom.bytes(18))
        var c = JSONObject()
        c["iss"] = .string(g.issuer)
        c["sub"] = .string(g.subject)
        c["aud"] = .string(g.resource)
        c["client_id"] = .string(g.clientID)
        c["idp_iss"] = .string(g.idpIssuer)
        if !g.scopes.isEmpty { c["scope"] = .string(g.scopes.joined(separator: " ")) }
        c["iat"] = .number(String(now))
        c["exp"] = .number(String(now + lifetime))
        c["jti"] = .string(jti)
        if let grantID = g.grantID { c["sid"] = .string(grantID) }
        if let jkt = g.jkt { c["cnf"] = .object(JSONObject(["jkt": .string(jkt)])) }
        for name in g.extraClaims.names where !Self.reserved.contains(name) && c[name] == nil {
            c[name] = g.extraClaims[name]
        }
        var header = JSONObject()
        header["typ"] = .string("at+jwt")
        if let kid = kid ?? key.kid { header["kid"] = .string(kid) }
        token = try JWSSigner.sign(claims: c, header: header, alg: alg, key: key)
        self.jti = jti
        expiresAt = now + lifetime
        clientID = g.clientID
        isBound = g.jkt != nil
    }
}
