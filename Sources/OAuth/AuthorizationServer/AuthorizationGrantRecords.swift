public import JOSE

/// A token endpoint refusal (RFC 6749 §5.2): the error code and a description for the client.
public struct TokenEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let description: String

    public init(_ code: String, _ description: String) {
        self.code = code
        self.description = description
    }

    public static func invalidGrant(_ why: String) -> Self { .init("invalid_grant", why) }
    public static func invalidRequest(_ why: String) -> Self { .init("invalid_request", why) }
}

/// Who a grant is for and what it allows: the user as their IdP names them, the client, the
/// one resource, the scopes, and the IdP's claims the resource's routes may map to headers.
/// What an authorization code and a refresh-token family both carry.
public struct GrantSubject: Sendable, Equatable {
    public var subject: String
    public var idpIssuer: String
    public var clientID: String
    public var resource: String
    public var scopes: [String]
    public var claims: JSONObject
    /// When the user signed in at the IdP for it (their session's start): a revocation of the
    /// user at the IdP after it ends the grant.
    public var authTime: Int64?
    /// The consent it was made under, if any: a grant ends once that consent no longer stands.
    public var consentID: String?

    public init(
        subject: String, idpIssuer: String, clientID: String, resource: String, scopes: [String],
        claims: JSONObject = JSONObject(), authTime: Int64? = nil, consentID: String? = nil
    ) {
        self.authTime = authTime
        self.consentID = consentID
        self.subject = subject
        self.idpIssuer = idpIssuer
        self.clientID = clientID
        self.resource = resource
        self.scopes = scopes
        self.claims = claims
    }

    var json: JSONObject {
        var o = JSONObject([
            "sub": .string(subject), "idp": .string(idpIssuer), "client": .string(clientID),
            "resource": .string(resource), "scope": .array(scopes.map { .string($0) }), "claims": .object(claims)
        ])
        if let authTime { o["auth_time"] = .number(String(authTime)) }
        if let consentID { o["consent"] = .string(consentID) }
        return o
    }

    init?(_ o: JSONObject) {
        guard let sub = o["sub"]?.string, let idp = o["idp"]?.string, let client = o["client"]?.string,
            let resource = o["resource"]?.string, let scopes = o["scope"]?.array?.compactMap(\.string),
            let claims = o["claims"]?.object
        else { return nil }
        self.init(
            subject: sub, idpIssuer: idp, clientID: client, resource: resource, scopes: scopes, claims: claims,
            authTime: o["auth_time"]?.int64, consentID: o["consent"]?.string)
    }
}

/// What an authorization code stands for between /authorize and /token (RFC 6749 §4.1.2):
/// single use, 60 s at most, and bound to the client, its redirect URI, the resource
/// (RFC 8707), the PKCE challenge (RFC 7636) and, when the authorization request named one,
/// the DPoP key (RFC 9449 §10).
public struct AuthorizationCodeRecord: Sendable, Equatable {
    public var grant: GrantSubject
    public var redirectURI: String
    public var codeChallenge: String
    public var issuedAt: Int64
    public var dpopJKT: String?
    /// Names what the code gives: its access tokens' `sid`. A second use of the code ends
    /// them by it.
    public var grantID: String
    /// The id of the refresh-token family the code starts (a second use ends it too). Not the
    /// `sid`: a refresh token's id is never shown to the resource.
    public var familyID: String

    public static let lifetime: Int64 = 60

    public init(
        grant: GrantSubject, redirectURI: String, codeChallenge: String, issuedAt: Int64, dpopJKT: String?,
        grantID: String = RefreshTokenFamily.newID(), familyID: String = RefreshTokenFamily.newID()
    ) {
        self.grantID = grantID
        self.familyID = familyID
        self.grant = grant
        self.redirectURI = redirectURI
        self.codeChallenge = codeChallenge
        self.issuedAt = issuedAt
        self.dpopJKT = dpopJKT
    }

    /// The token request against the code: RFC 6749 §4.1.3 (the client and redirect URI),
    /// RFC 7636 §4.6 (the verifier), RFC 8707 §2.2 (a `resource`, if sent, is the code's),
    /// RFC 9449 §10 (the proof's key is the one the code is bound to). Every failure is
    /// `invalid_grant`, with no hint of which part failed beyond the description.
    public func redeem(
        clientID: String, redirectURI: String?, resource: String?, verifier: String?, jkt: String?, now: Int64
    )
        throws(TokenEndpointError)
    {
        guard now < issuedAt + Self.lifetime, now >= issuedAt - 5 else {
            throw .invalidGrant("the authorization code has expired")
        }
        guard clientID == grant.clientID else { throw .invalidGrant("the code was issued to another client") }
        guard redirectURI == self.redirectURI else {
            throw .invalidGrant("redirect_uri is not the one the code was issued for")
        }
        guard let verifier, PKCE.matches(verifier: verifier, challenge: codeChallenge) else {
            throw .invalidGrant("the code_verifier does not match the code_challenge")
        }
        if let resource, resource != grant.resource {
            throw .invalidGrant("the resource is not the one the code was issued for")
        }
        if let bound = dpopJKT, bound != jkt {
            throw .invalidGrant("the code is bound to another DPoP key")
        }
    }

    public var encoded: [UInt8] {
        var o = JSONObject([
            "g": .object(grant.json), "r": .string(redirectURI), "c": .string(codeChallenge),
            "t": .number(String(issuedAt)), "i": .string(grantID), "f": .string(familyID)
        ])
        if let dpopJKT { o["j"] = .string(dpopJKT) }
        return Array(JSONSerializer.serialize(.object(o)).utf8)
    }

    public init?(encoded: [UInt8]) {
        guard let o = (try? JSONParser.parse(encoded))?.object, let g = o["g"]?.object.flatMap(GrantSubject.init),
            let r = o["r"]?.string, let c = o["c"]?.string, let t = o["t"]?.int64, let i = o["i"]?.string,
            let f = o["f"]?.string
        else { return nil }
        self.init(
            grant: g, redirectURI: r, codeChallenge: c, issuedAt: t, dpopJKT: o["j"]?.string, grantID: i, familyID: f)
    }
}

/// A refresh-token family (RFC 9700 §4.14.2): the grant, its absolute end, the digest of the
/// one refresh token that is current, and those of the tokens it replaced. Each use rotates
/// it. A token it replaced coming back (a stolen copy used after its owner, or the owner after
/// the thief) ends the whole family, and with it the access tokens of its grant. A token it
/// never issued is only refused: guessing one must not let anyone end a user's grant.
public struct RefreshTokenFamily: Sendable, Equatable {
    /// The public part of its refresh tokens: random, and not the grant's `sid`.
    public var id: String
    /// The grant its access tokens name (`sid`).
    public var grantID: String
    public var grant: GrantSubject
    public var currentDigest: [UInt8]
    /// The digests of the tokens it replaced, the latest last.
    public var previousDigests: [[UInt8]]
    public var generation: Int
    public var createdAt: Int64
    public var expiresAt: Int64
    public var dpopJKT: String?

    /// How many replaced tokens are remembered as the family's own.
    public static let remembered = 32

    /// A refresh token: the family's id and a secret, `<id>.<secret>`; the store keeps only
    /// the secret's digest.
    public struct Token: Sendable, Equatable {
        public let familyID: String
        public let secret: String
        public var text: String { familyID + "." + secret }

        public init?(_ text: String) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].utf8.count == 22, parts[1].utf8.count == 43,
                Base64URL.decode(String(parts[0])) != nil, Base64URL.decode(String(parts[1])) != nil
            else { return nil }
            familyID = String(parts[0])
            secret = String(parts[1])
        }

        init(familyID: String, secret: String) {
            self.familyID = familyID
            self.secret = secret
        }

        static func fresh(familyID: String) -> Token {
            Token(familyID: familyID, secret: Base64URL.encode(SecureRandom.bytes(32)))
        }
    }

    /// A family id (or a grant id): 128 random bits, 22 base64url characters.
    public static func newID() -> String { Base64URL.encode(SecureRandom.bytes(16)) }

    /// A new family for `grant` and its first token; `id` and `grantID` as the code named them.
    public static func start(
        _ grant: GrantSubject, id: String = newID(), grantID: String = newID(), lifetime: Int64, now: Int64,
        dpopJKT: String?
    ) -> (RefreshTokenFamily, Token) {
        let token = Token.fresh(familyID: id)
        let family = RefreshTokenFamily(
            id: id, grantID: grantID, grant: grant, currentDigest: Self.digest(token), previousDigests: [],
            generation: 1, createdAt: now, expiresAt: now + lifetime, dpopJKT: dpopJKT)
        return (family, token)
    }

    /// What a refresh request with `token` does to the family.
    public enum Use: Sendable, Equatable {
        /// The current token: the family rotated to `next`.
        case rotated(RefreshTokenFamily, next: Token)
        /// A token the family replaced: it ends (RFC 9700 §4.14.2).
        case reused
        /// A token the family never issued: refused, and nothing else.
        case unknown
        case expired
        case otherClient
    }

    public func use(_ token: Token, clientID: String, now: Int64) -> Use {
        guard now < expiresAt else { return .expired }
        // Another client proved nothing about the token's owner: refused before anything is
        // judged of the token.
        guard clientID == grant.clientID else { return .otherClient }
        let presented = Self.digest(token)
        guard ConstantTime.equals(presented, currentDigest) else {
            return previousDigests.contains { ConstantTime.equals($0, presented) } ? .reused : .unknown
        }
        var next = self
        let fresh = Token.fresh(familyID: id)
        next.previousDigests = Array((previousDigests + [currentDigest]).suffix(Self.remembered))
        next.currentDigest = Self.digest(fresh)
        next.generation += 1
        return .rotated(next, next: fresh)
    }

    static func digest(_ token: Token) -> [UInt8] {
        Digest.sha256.hash(Array("tokengate/refresh/v1\u{0}\(token.familyID)\u{0}\(token.secret)".utf8))
    }

    public var encoded: [UInt8] {
        var o = JSONObject([
            "i": .string(id), "s": .string(grantID), "g": .object(grant.json),
            "d": .string(Base64URL.encode(currentDigest)),
            "p": .array(previousDigests.map { .string(Base64URL.encode($0)) }), "n": .number(String(generation)),
            "c": .number(String(createdAt)), "e": .number(String(expiresAt))
        ])
        if let dpopJKT { o["j"] = .string(dpopJKT) }
        return Array(JSONSerializer.serialize(.object(o)).utf8)
    }

    public init?(encoded: [UInt8]) {
        guard let o = (try? JSONParser.parse(encoded))?.object, let id = o["i"]?.string, let sid = o["s"]?.string,
            let g = o["g"]?.object.flatMap(GrantSubject.init), let d = o["d"]?.string.flatMap({ Base64URL.decode($0) }),
            let p = o["p"]?.array, let n = o["n"]?.int64, let c = o["c"]?.int64, let e = o["e"]?.int64
        else { return nil }
        let previous = p.compactMap { $0.string.flatMap { Base64URL.decode($0) } }
        guard previous.count == p.count else { return nil }
        self.init(
            id: id, grantID: sid, grant: g, currentDigest: d, previousDigests: previous, generation: Int(n),
            createdAt: c, expiresAt: e, dpopJKT: o["j"]?.string)
    }

    init(
        id: String, grantID: String, grant: GrantSubject, currentDigest: [UInt8], previousDigests: [[UInt8]],
        generation: Int, createdAt: Int64, expiresAt: Int64, dpopJKT: String?
    ) {
        self.id = id
        self.grantID = grantID
        self.grant = grant
        self.currentDigest = currentDigest
        self.previousDigests = previousDigests
        self.generation = generation
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.dpopJKT = dpopJKT
    }
}
