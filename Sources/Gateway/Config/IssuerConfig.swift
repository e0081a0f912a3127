import JOSE
import OAuth

/// An `issuers:` entry: where an authorization server's keys come from and the rules its
/// access tokens must meet (RFC 9068, RFC 8414).
struct IssuerConfig: Sendable {
    enum KeySource: Sendable, Equatable {
        /// OIDC Discovery / RFC 8414 metadata at `<issuer>/.well-known/openid-configuration`.
        case discovery
        case jwksURI(String)
        /// A local JWK Set file, read at start and on reload.
        case jwksFile(String)
        /// The gateway's own authorization server's signing keys (`issuers: [self]`).
        case own
    }

    var name: String
    /// The exact `iss` of its tokens, or a template with one `{tenant}` (`tenants` then set).
    var issuer: String
    var keys: KeySource
    /// `issuer_aliases`: other exact spellings of `iss` its tokens use.
    var issuerAliases: [String] = []
    /// `tenants`: with a `{tenant}` in `issuer`, the tenants whose tokens are accepted
    /// (IssuerConfig+Template.swift); nil for a single-tenant issuer.
    var tenants: IssuerTemplate.Tenants?
    /// `tenant_claim`: the claim naming a token's tenant.
    var tenantClaim = "tid"
    /// `discovery_tenant`: the path segment `{tenant}` takes in the discovery URL of a
    /// template issuer (Entra ID: `organizations`, `common`, or one tenant id).
    var discoveryTenant = "organizations"
    /// `provider`: the preset its other keys default from (IssuerConfig+Provider.swift).
    var provider: IdentityProvider?
    /// `role_claims`: where its tokens carry roles; nil: the provider's, or `roles`.
    var roleClaims: [ClaimPath]?
    /// `audience_claim`: `aud`, or `client_id` (Cognito access tokens carry no `aud`).
    var audienceClaim = AudienceClaim.aud
    /// `token_use`: the `token_use` claim its access tokens must say (Cognito: `access`).
    var tokenUse: String?
    /// The keys its mapping gave (what a preset did not set: `presetNotes`).
    var explicitKeys: Set<String> = []
    var algorithms: Set<JWSAlgorithm> = [.RS256, .PS256, .ES256, .EdDSA]
    var audiences: [String] = []
    var leeway = 30.0
    /// `unknown_kid_wait`: the longest a request waits for the refetch a token with an
    /// unknown `kid` triggers; past it the request gets 401 `invalid_token` and the fetch
    /// goes on in the background (0: never wait).
    var unknownKidWait = IssuerKeyResolver.defaultRefetchWait
    /// e.g. "at+jwt": required `typ` of access tokens (RFC 9068 §2.1).
    var accessTokenType: String?
    /// `scope_claim`: where its tokens carry scopes — `scope` (RFC 9068 §2.2.3, the default)
    /// or `scp` for ASes that use it; one or the other, never both.
    var scopeClaim: ScopeClaim = .scope
    /// `scope_implies`: the issuer's scope hierarchy (MCP 2026-07-28: a broader scope implies
    /// narrower ones), for `require.scopes` on every route.
    var scopeImplication: ScopeImplication?
    /// `claim_sources`: the URL prefixes distributed claims may be fetched from (OIDC Core
    /// §5.6.2); a source elsewhere is never called. Empty: none is.
    var claimSources: [String] = []
    /// CA bundle for this issuer's HTTPS endpoints (default: the system's).
    var caFile: String?
    /// RFC 7662 introspection for opaque tokens.
    var introspection: IntrospectionConfig?
    /// `profile: fapi2`: its tokens are sender-constrained or refused, and its algorithms
    /// are FAPI 2.0's (ConfigParser+Profile.swift).
    var profile: SecurityProfile?
}

/// A security profile a client or an issuer is held to (`profile:`).
enum SecurityProfile: String, Sendable {
    /// FAPI 2.0 Security Profile and Message Signing (OpenID Foundation, final).
    case fapi2
}

/// The gateway's registration as an OAuth client (`clients:`).
struct ClientConfig: Sendable {
    enum AssertionAudience: String, Sendable { case issuer, endpoint }
    var name: String
    var issuer: String?
    var authentication: ClientAuthentication
    /// `aud` of client assertions (RFC 7523 §3): the issuer, or the URL of the endpoint called.
    var assertionAudience = AssertionAudience.issuer
    /// The client's private key (`key_file`): signs request objects (RFC 9101) and, with
    /// private_key_jwt, client assertions; its public half is served at /.well-known/jwks.json.
    var key: JWK?
    /// The algorithm request objects are signed with (RS256, RS384, PS256 or ES256).
    var requestObjectAlgorithm: JWSAlgorithm?
    /// Settings for browser logins (`auth: login` routes) through this client.
    var login = LoginClientSettings()
    /// `profile: fapi2`: the login refuses what FAPI 2.0 forbids (ConfigParser+Profile.swift).
    var profile: SecurityProfile?
    /// `tls:` — the certificate presented to the AS (RFC 8705): it authenticates the client
    /// with `tls_client_auth` / `self_signed_tls_client_auth`, and binds the tokens the AS
    /// issues to it (§3) whatever the authentication; the metadata's `mtls_endpoint_aliases`
    /// are called instead of the plain endpoints (§5).
    var tls: ClientTLS?
}

/// A client's certificate towards the AS.
struct ClientTLS: Sendable {
    var certFile: String
    var keyFile: String
    /// The certificate's `x5t#S256` (RFC 8705 §3.1): what tokens bound to it carry.
    var thumbprint: String
    /// `self_signed_tls_client_auth`: the certificate as a JWK with `x5c`, published in the
    /// gateway's JWKS for the AS to match (RFC 8705 §2.2).
    var publishedJWK: JSONObject?

    /// What curl presents (FetchSettings.clientCertificate).
    var files: (certFile: String, keyFile: String) { (certFile, keyFile) }
}

/// How a client runs the login round-trip (OIDC code flow with PKCE, RFC 9101 / 9126).
struct LoginClientSettings: Sendable {
    enum RequestMode: String, Sendable, CaseIterable {
        /// The request object pushed to the PAR endpoint; the browser carries only its request_uri (RFC 9126).
        case par
        /// The request object by value in the authorization URL (RFC 9101 §5.1).
        case request
        /// The request object hosted by the gateway at an unguessable single-use URL the AS fetches (RFC 9101 §5.2).
        case request_uri
        /// Plain query parameters, no request object (for servers without JAR).
        case plain
    }
    var requestMode = RequestMode.par
    /// How the AS returns the authorization response (OAuth 2.0 Multiple Response Type Encoding
    /// Practices; JARM, FAPI 2.0 Message Signing §5.4).
    enum ResponseMode: String, Sendable, CaseIterable {
        /// Plain query parameters (the code flow's default; nothing is sent).
        case query
        /// A JWT the AS signs (JARM), in the query for the code flow.
        case jwt
        /// The same, named explicitly.
        case queryJWT = "query.jwt"

        var isJWT: Bool { self != .query }
    }
    var responseMode = ResponseMode.query
    var scopes = ["openid", "profile", "email"]
    /// nil: `public_url` + the callback path.
    var redirectURI: String?
    /// Extra authorization request parameters (prompt, acr_values, audience, resource, ui_locales …).
    var extra: [(String, String)] = []
    /// A `login_hint` query parameter of /oauth2/start is passed on.
    var loginHintFromQuery = false
    /// Where the AS sends the browser after RP-initiated logout (must be registered there).
    var postLogoutRedirectURI: String?
    /// Revoke the refresh token at logout (RFC 7009) when the AS has a revocation endpoint.
    var revokeOnLogout = true
    /// Get DPoP-bound tokens at the token endpoint (RFC 9449 §5) with a key the gateway holds.
    var dpop = false
    /// Pass `email` on even when the AS does not say `email_verified: true` (off: such an
    /// email is dropped, so X-Forwarded-Email only ever carries verified addresses).
    var allowUnverifiedEmail = false
    /// `userinfo: true`: the AS's userinfo endpoint (OIDC Core §5.3) is asked at login and after
    /// each refresh; its claims (same `sub`, §5.3.2) are merged into the session's.
    var userinfo = false
}

/// `session:` — sealed-cookie (or Redis) sessions for `auth: login` routes.
struct SessionConfig: Sendable {
    /// AES-256-GCM keys: the first seals, all open (rotation). Empty: a random key per
    /// process (sessions do not survive a restart; replicas need configured keys).
    var keys: [[UInt8]] = []
    var cookieName = "tokengate_session"
    /// Secure cookies (and the __Host- prefix); false only for plain-http development.
    var secureCookie = true
    var idleTimeout = 3600.0
    var absoluteTimeout = 12 * 3600.0
    /// Refresh the access token this long before it expires.
    var refreshMargin = 30.0
    /// How long a browser may take to come back from the AS.
    var loginTimeout = 600.0
    /// Parallel logins (tabs) one browser may have pending; the oldest is dropped past this.
    var maxPendingLogins = 5
    /// With a Redis store: sessions read from Redis are kept on the worker this long.
    var cacheTTL = 5.0
    /// Where pending logins live: `store` (Redis with a Redis store, else the cookie) or
    /// `cookie` (always the sealed cookie: nothing is written to Redis before a user has
    /// logged in — replicas still share them through the session keys).
    var pendingLoginsInCookie = false
    /// `cookie_domain`: the session cookie's Domain (one login for every host under it); its
    /// name then takes the `__Secure-` prefix, as `__Host-` forbids a Domain.
    var cookieDomain: String? = nil
    /// `same_site` of the session cookie (the login-state cookie is always Lax).
    var sameSite = SameSite.lax
}

/// RFC 6265bis §4.1.2.7 SameSite values.
enum SameSite: String, Sendable, CaseIterable {
    case lax, strict, none
    /// As written in Set-Cookie.
    var attribute: String {
        switch self {
        case .lax: return "Lax"
        case .strict: return "Strict"
        case .none: return "None"
        }
    }
}

/// `login:` — the gateway's own login endpoints and where browsers may be sent back to.
struct LoginConfig: Sendable {
    var startPath = "/oauth2/start"
    var callbackPath = "/oauth2/callback"
    var logoutPath = "/oauth2/logout"
    /// Where the AS posts logout tokens (OIDC Back-Channel Logout 1.0): register this URL as
    /// the client's backchannel_logout_uri.
    var backchannelLogoutPath = "/oauth2/backchannel-logout"
    /// Where the AS fetches hosted request objects (request_mode: request_uri).
    var requestObjectPath = "/oauth2/request/"
    var jwksPath = "/.well-known/jwks.json"
    /// Hosts (exact or *.suffix) an absolute `rd` may point to; same-origin paths always may.
    var allowedRedirectHosts: [String] = []
    /// Where a browser goes after logout when the AS has no end_session_endpoint.
    var afterLogout = "/"
    /// `rate_limit`: the policies the browser's login endpoints count (`OwnRoutes`), by the
    /// client's address only (`key: ip`).
    var rateLimits: [RateLimitPolicy] = []
}

/// An issuer's introspection endpoint and how long answers are cached.
struct IntrospectionConfig: Sendable {
    var client: ClientConfig
    /// nil: from the issuer's discovery metadata (`introspection_endpoint`).
    var endpoint: String?
    /// Positive answers are cached until min(exp, this).
    var cacheTTL = 60.0
    /// `active: false` answers are cached this long (a flood of bad tokens is not a flood at the AS).
    var negativeTTL = 10.0
    /// `signed: true` (always with `profile: fapi2`): only JWT answers signed by the issuer
    /// (RFC 9701) are taken.
    var signed = false
}

/// The access-token settings of a route with `auth: bearer`, `dpop` or `token`.
struct TokenRouteConfig: Sendable {
    var issuers: [String]
    var requirement = AuthorizationRequirement()
    /// `access_token` in the query string is accepted (RFC 6750 §2.3; off by default).
    var tokenInQuery = false
    /// `access_token` in a form-encoded POST body is accepted (RFC 6750 §2.2; off by default).
    var tokenInBody = false
    /// The route's issuers with `profile: fapi2`: their tokens pass only sender-constrained
    /// (DPoP- or certificate-bound).
    var boundOnlyIssuers: Set<String> = []
    /// The Authorization header goes upstream too (default: stripped).
    var forwardToken = false
    /// A tunnel opened with a token is ended (Close 1008) when the token expires.
    var closeAtTokenExpiry = false
    var realm = "tokengate"
    /// `resource`: the RFC 8707 resource identifier tokens must name in `aud`, and the RFC 9728
    /// metadata the gateway serves for it (ProtectedResourceConfig.swift); nil: none.
    var resource: ProtectedResourceConfig?
    /// `mcp`: the route is an MCP server's endpoint, and each JSON-RPC call is judged by these
    /// rules before it is forwarded (MCPRules.swift); nil: the body is not read.
    var mcp: MCPRules?
    /// `token_exchange`: the caller's token is exchanged (RFC 8693) and the result sent
    /// upstream in its place (TokenExchangeConfig.swift); nil: no exchange.
    var tokenExchange: TokenExchangeConfig? {
        get { exchangeStorage?.config }
        set { exchangeStorage = newValue.map(TokenExchangeConfig.Stored.init) }
    }
    /// Held by reference: the request path copies this struct, and the exchange's settings
    /// (client keys, targets) would make every copy retain them one by one.
    private(set) var exchangeStorage: TokenExchangeConfig.Stored? = nil
    /// `auth: bearer`, `dpop` or `token`: the schemes accepted, and how DPoP proofs are checked.
    var schemes = TokenSchemes.bearer
    /// `api_keys`: the key sets whose keys pass beside the issuers' tokens; with `keysOnly`
    /// (`auth: api_key`), in their place.
    var apiKeySets: [String] = []
    var keysOnly = false
    /// Where those sets' keys come in a request.
    var apiKeys = APIKeyLocations(sets: [], [:])

    /// How DPoP proofs are checked (RFC 9449); nil on a `bearer` route, which accepts none.
    var dpop: DPoPRouteConfig? { schemes.dpop }
}

/// The authorization schemes a token route accepts (RFC 6750 §2.1 `Bearer`, RFC 9449 §7.1
/// `DPoP`); each that accepts DPoP carries its proof rules.
enum TokenSchemes: Sendable {
    /// `auth: bearer`.
    case bearer
    /// `auth: dpop`: DPoP-bound tokens with a proof, only in the Authorization header.
    case dpop(DPoPRouteConfig)
    /// `auth: token` (and the token side of `login_or_token`): either scheme.
    case bearerOrDPoP(DPoPRouteConfig)

    var dpop: DPoPRouteConfig? {
        switch self {
        case .bearer: nil
        case .dpop(let d), .bearerOrDPoP(let d): d
        }
    }

    /// A `Bearer` token (header, and query or form where allowed) is accepted.
    var acceptsBearer: Bool {
        if case .dpop = self { return false }
        return true
    }

    /// A `DPoP` token with its proof is accepted.
    var acceptsDPoP: Bool {
        if case .bearer = self { return false }
        return true
    }
}

/// A route's `dpop:` settings (RFC 9449 §4.3, §8, §11.1).
struct DPoPRouteConfig: Sendable {
    static let defaultAlgorithms: Set<JWSAlgorithm> = [.ES256, .ES384, .PS256, .RS256, .EdDSA]
    /// Proof algorithms accepted (asymmetric only); advertised in `algs` of the challenge.
    var algorithms = DPoPRouteConfig.defaultAlgorithms
    /// Accepted |now − iat| of a proof without a server nonce, before leeway.
    var iatWindow = 60.0
    var leeway = 5.0
    /// Every proof must carry a valid server nonce (§8): `nonce: required`.
    var nonceRequired = false
    /// The DPoP header goes upstream too (default: stripped, the gateway consumed it).
    var forwardProof = false
    /// Header that tells the upstream the thumbprint of the caller's key; nil: none.
    var jktHeader: String? = "X-Forwarded-Jkt"
}

/// Gateway-wide DPoP settings (`dpop:`): the keys of stateless server nonces and the bound
/// of the in-memory replay cache.
struct DPoPSettings: Sendable {
    /// HMAC keys for nonces: the first issues, all verify. Empty: a random key per process
    /// (fine for one process; replicas need a shared key).
    var nonceKeys: [[UInt8]] = []
    var nonceLifetime = 300.0
    /// Entries of the in-memory jti cache (`store: memory`); when full of live entries, new
    /// proofs are refused (503) rather than a replay let through.
    var replayCacheEntries = 1_000_000
    /// When the replay store cannot answer: refuse (503, the default: a possibly replayed proof
    /// is never accepted) or accept the proof unchecked for replay (availability first; logged
    /// and counted).
    var failOpenOnStoreFailure = false
    /// `key_file`: what signs the gateway's own DPoP proofs (logins with `dpop: true`, token
    /// exchange, proofs sent upstream), made once when the config is read. Nil: a random ES256
    /// key per process, which replicas sharing sessions cannot use (another replica's proofs
    /// would not match the session token's `cnf.jkt`).
    var proofSigner: DPoPProofSigner?
}

extension GatewayConfig {
    /// What signs the gateway's own DPoP proofs: `dpop.key_file`, or the process's key.
    var dpopProofSigner: DPoPProofSigner { dpop.proofSigner ?? Self.processDPoPSigner }

    /// The process's random key (ES256 always fits it).
    static let processDPoPSigner: DPoPProofSigner = {
        do { return try DPoPProofSigner(key: ProcessSecrets.dpopKey, alg: .ES256) } catch {
            preconditionFailure("\(error)")
        }
    }()
}
