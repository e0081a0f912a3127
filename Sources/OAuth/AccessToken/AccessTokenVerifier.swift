public import JOSE

/// One issuer's rules for JWT access tokens (RFC 9068, RFC 8725).
public struct IssuerPolicy: Sendable {
    public var name: String
    /// The exact `iss` value (with `template`: the template's text, never compared).
    public var issuer: String
    /// Other exact spellings of `iss` it uses (Google: `accounts.google.com` besides
    /// `https://accounts.google.com`); none for a multi-tenant issuer.
    public var aliases: [String] = []
    /// A multi-tenant issuer: `iss` is one of these templates filled with the token's tenant
    /// claim (Entra ID's v2.0 and v1 forms); empty for a single-tenant issuer.
    public var templates: [IssuerTemplate] = []
    /// Where its tokens carry roles (`require.roles`).
    public var roleClaims: [ClaimPath] = RoleClaims.standard
    /// Which claim names the audience: `aud` (RFC 7519 §4.1.3), or `client_id` for an AS whose
    /// access tokens carry none (Cognito).
    public var audienceClaim: AudienceClaim = .aud
    /// The `token_use` its access tokens must say (Cognito: `access`, where an ID token says
    /// `id`); nil: not checked.
    public var tokenUse: String?
    public var algorithms: Set<JWSAlgorithm>
    public var audiences: [String]
    public var leeway: Int64
    /// e.g. "at+jwt" (RFC 9068 §2.1); nil accepts any typ.
    public var requiredType: String?
    public var maxTokenSize: Int
    /// The one claim its tokens (and introspection answers) carry scopes in.
    public var scopeClaim: ScopeClaim
    /// Its scope hierarchy (`scope_implies`), if it has one.
    public var scopeImplication: ScopeImplication?

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
    /// RFC 8705 §3.1: the SHA-256 of the client certificate the token is bound to, if it is
    /// certificate-bound (`cnf.x5t#S256`, decoded).
    public let x5tS256: [UInt8]?
    /// `cnf` has an `x5t#S256` member that is no SHA-256 in base64url: bound to a certificate
    /// no connection can match, so never accepted.
    public let hasMalformedX5t: Bool
    /// The token has a `cnf` claim at all (RFC 7800): bound to a key — DPoP or another kind
    /// (mTLS `x5t#S256` …) — so it is never good as a plain Bearer token.
    public var isSenderConstrained = false
    /// Where its scopes are read from: its issuer's choice.
    public var scopeClaim: ScopeClaim = .scope
    /// Its issuer's scope hierarchy: a broader scope it holds meets a narrower one.
    public var scopeImplication: ScopeImplication?
    /// Where its roles are read from: its issuer's choice.
    public var roleClaims: [ClaimPath] = RoleClaims.standard
    /// For an introspected token: when its AS's answer was given (nil for a JWT).
    public var vouchedAt: Int64?
    public var subject: String? { claims[ClaimNames.sub]?.string }

    /// From the `cnf` claim or introspection member: `jkt` when it is a well-formed DPoP
    /// binding; any `cnf` at all makes the token sender-constrained.
    public init(issuer: String, claims: JSONObject, expiresAt: Int64, confirmation: JSONValue?) {
        self.issuer = issuer
        self.claims = claims
        self.expiresAt = expiresAt
        let jkt = confirmation?.object?[ClaimNames.jkt]?.string
        self.jkt = jkt.flatMap { $0.utf8.count == 43 && Base64URL.decode($0)?.count == 32 ? $0 : nil }
        let x5t = confirmation?.object?[ClaimNames.x5tS256]
        x5tS256 = x5t?.string.flatMap { $0.utf8.count == 43 ? Base64URL.decode($0) : nil }.flatMap {
            $0.count == 32 ? $0 : nil
        }
        hasMalformedX5t = x5t != nil && x5tS256 == nil
        isSenderConstrained = confirmation != nil
    }
    public var clientID: String? { claims[ClaimNames.clientID]?.string ?? claims[ClaimNames.azp]?.string }
}

/// The claims read on every access token, prepared for lookups once.
enum ClaimNames {
    static let iss = JSONObject.Name("iss")
    static let sub = JSONObject.Name("sub")
    static let exp = JSONObject.Name("exp")
    static let cnf = JSONObject.Name("cnf")
    static let jkt = JSONObject.Name("jkt")
    static let x5tS256 = JSONObject.Name("x5t#S256")
    static let clientID = JSONObject.Name("client_id")
    static let azp = JSONObject.Name("azp")
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
        /// A multi-tenant issuer's token whose tenant claim is missing, does not match `iss`,
        /// or names a tenant that is not allowed.
        case tenantRefused(IssuerTemplate.Refusal)
    }

    public let issuers: [IssuerPolicy]
    /// Per issuer, made once: the claims policy and whether its tokens are RFC 9068's.
    private let claimsPolicies: [JWTClaimsPolicy]
    private let profiles: [Bool]
    private let maxTokenSize: Int
    /// Some issuer has aliases or a template: only then is a token whose `iss` equals no
    /// configured issuer looked at again (the exact comparison stays the whole cost otherwise).
    private let hasInexactIssuers: Bool

    public init(issuers: [IssuerPolicy]) {
        self.issuers = issuers
        hasInexactIssuers = issuers.contains { !$0.aliases.isEmpty || !$0.templates.isEmpty }
        claimsPolicies = issuers.map { policy in
            // Aliases and templates are matched by `issuerIndex`, which picked the policy.
            let exact = policy.aliases.isEmpty && policy.templates.isEmpty
            var claimsPolicy = JWTClaimsPolicy(
                issuer: exact ? policy.issuer : nil, audiences: policy.audienceClaim == .aud ? policy.audiences : [],
                leeway: policy.leeway,
                type: policy.requiredType)
            claimsPolicy.requireExpiry = true
            return claimsPolicy
        }
        profiles = issuers.map { RFC9068Claims.isProfile($0.requiredType) }
        maxTokenSize = issuers.map(\.maxTokenSize).max() ?? CompactJWS.defaultMaxSize
    }

    /// The issuer a token whose `iss` matched no issuer exactly belongs to: the first whose
    /// aliases name it, else the first template it fits whose tenant check passes (else the
    /// first it fits, which then refuses it with the reason).
    private func inexactIssuer(_ iss: String, _ claims: JSONObject) -> (at: Int, template: IssuerTemplate?)? {
        if let at = issuers.firstIndex(where: { $0.aliases.contains(iss) }) { return (at, nil) }
        var fitting: (Int, IssuerTemplate)?
        for (at, policy) in issuers.enumerated() {
            for template in policy.templates where template.fits(iss) {
                if case .success = template.tenant(iss: iss, claims: claims) { return (at, template) }
                if fitting == nil { fitting = (at, template) }
            }
        }
        return fitting
    }

    /// `keys(name)`: the current key set of the issuer with that config name; `headerMemo`:
    /// the calling loop's headers of tokens accepted before (see `JWSHeaderMemo`).
    public func verify(
        _ token: String, now: Int64, keys: (String) -> JWKSet?, headerMemo: JWSHeaderMemo? = nil
    ) -> Result<VerifiedAccessToken, Failure> {
        let jws: CompactJWS
        let unverifiedClaims: JSONObject
        do {
            jws = try CompactJWS(token, maxSize: maxTokenSize, knownHeader: headerMemo.map { $0.header(for:) })
            unverifiedClaims = try jws.claims()
        } catch let e as JOSEError {
            return .failure(.malformed(e.description))
        } catch {
            return .failure(.malformed("not a JWT"))
        }
        guard let iss = unverifiedClaims[ClaimNames.iss]?.string,
            let (at, template) =
                issuers.firstIndex(where: { $0.issuer == iss && $0.templates.isEmpty }).map({ ($0, nil) })
                ?? (hasInexactIssuers ? inexactIssuer(iss, unverifiedClaims) : nil)
        else {
            return .failure(.unknownIssuer)
        }
        let policy = issuers[at]
        // The tenant is checked before any key is looked at: a token of a tenant that is not
        // allowed never costs a key refetch, whatever `kid` it names.
        if let template, case .failure(let refusal) = template.tenant(iss: iss, claims: unverifiedClaims) {
            return .failure(.tenantRefused(refusal))
        }
        guard let set = keys(policy.name) else { return .failure(.keysUnavailable(issuer: policy.name)) }
        do {
            try JWSVerifier(keys: set, algorithms: policy.algorithms).verify(jws)
            try claimsPolicies[at].validate(header: jws.header, claims: unverifiedClaims, now: now)
            if profiles[at] { try RFC9068Claims.validate(unverifiedClaims) }
            try policy.checkAudienceClaimAndUse(unverifiedClaims)
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
        // Accepted whole: its header may stand for the same bytes on the next token.
        headerMemo?.remember(jws)
        var token = VerifiedAccessToken(
            issuer: policy.name, claims: unverifiedClaims,
            expiresAt: unverifiedClaims[ClaimNames.exp]?.int64 ?? now, confirmation: unverifiedClaims[ClaimNames.cnf])
        token.scopeClaim = policy.scopeClaim
        token.roleClaims = policy.roleClaims
        token.scopeImplication = policy.scopeImplication
        return .success(token)
    }
}

/// Which claim names an access token's audience.
public enum AudienceClaim: String, Sendable, Equatable, CaseIterable {
    /// `aud` (RFC 7519 §4.1.3, RFC 9068 §2.2).
    case aud
    /// `client_id` (RFC 9068 §2.2): Cognito's access tokens carry no `aud`, only the app client.
    case client_id
}

extension IssuerPolicy {
    /// With `audienceClaim: client_id`, the token's `client_id` is one of `audiences`; with
    /// `tokenUse`, its `token_use` says so (a Cognito ID token, `token_use: id`, has the app
    /// client in `aud` and is no access token).
    func checkAudienceClaimAndUse(_ claims: JSONObject) throws(JOSEError) {
        if let tokenUse, claims["token_use"]?.string != tokenUse {
            throw JOSEError(.typeMismatch, claim: "token_use", "is not \(tokenUse)")
        }
        if audienceClaim == .client_id {
            guard let id = claims["client_id"]?.string else {
                throw JOSEError(.missingClaim, claim: "client_id", "is required")
            }
            guard audiences.contains(id) else {
                throw JOSEError(.audienceMismatch, claim: "client_id", "not an accepted client")
            }
        }
    }
}
