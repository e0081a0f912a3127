import JOSE
import OAuth

/// An `issuers:` entry: where an authorization server's keys come from and the rules its
/// access tokens must meet (RFC 9068, RFC 8414).
public struct IssuerConfig: Sendable {
    public enum KeySource: Sendable, Equatable {
        /// OIDC Discovery / RFC 8414 metadata at `<issuer>/.well-known/openid-configuration`.
        case discovery
        case jwksURI(String)
        /// A local JWK Set file, read at start and on reload.
        case jwksFile(String)
    }

    public var name: String
    public var issuer: String
    public var keys: KeySource
    public var algorithms: Set<JWSAlgorithm> = [.RS256, .PS256, .ES256, .EdDSA]
    public var audiences: [String] = []
    public var leeway = 30.0
    /// e.g. "at+jwt": required `typ` of access tokens (RFC 9068 §2.1).
    public var accessTokenType: String?
    /// CA bundle for this issuer's HTTPS endpoints (default: the system's).
    public var caFile: String?
    /// RFC 7662 introspection for opaque tokens.
    public var introspection: IntrospectionConfig?
}

/// The gateway's registration as an OAuth client (`clients:`).
public struct ClientConfig: Sendable {
    public enum AssertionAudience: String, Sendable { case issuer, endpoint }
    public var name: String
    public var issuer: String?
    public var authentication: ClientAuthentication
    /// `aud` of client assertions (RFC 7523 §3): the issuer, or the URL of the endpoint called.
    public var assertionAudience = AssertionAudience.issuer
}

/// An issuer's introspection endpoint and how long answers are cached.
public struct IntrospectionConfig: Sendable {
    public var client: ClientConfig
    /// nil: from the issuer's discovery metadata (`introspection_endpoint`).
    public var endpoint: String?
    /// Positive answers are cached until min(exp, this).
    public var cacheTTL = 60.0
    /// `active: false` answers are cached this long (a flood of bad tokens is not a flood at the AS).
    public var negativeTTL = 10.0
}

/// The access-token settings of a route with `auth: bearer`, `dpop` or `token`.
public struct TokenRouteConfig: Sendable {
    public var issuers: [String]
    public var requirement = AuthorizationRequirement()
    /// `access_token` in the query string is accepted (RFC 6750 §2.3; off by default).
    public var tokenInQuery = false
    /// `access_token` in a form-encoded POST body is accepted (RFC 6750 §2.2; off by default).
    public var tokenInBody = false
    /// The Authorization header goes upstream too (default: stripped).
    public var forwardToken = false
    public var realm = "tokengate"
    /// Set on `dpop` and `token` routes: how DPoP proofs are checked (RFC 9449).
    public var dpop: DPoPRouteConfig?
}

/// A route's `dpop:` settings (RFC 9449 §4.3, §8, §11.1).
public struct DPoPRouteConfig: Sendable {
    public static let defaultAlgorithms: Set<JWSAlgorithm> = [.ES256, .ES384, .PS256, .RS256, .EdDSA]
    /// Proof algorithms accepted (asymmetric only); advertised in `algs` of the challenge.
    public var algorithms = DPoPRouteConfig.defaultAlgorithms
    /// Accepted |now − iat| of a proof without a server nonce, before leeway.
    public var iatWindow = 60.0
    public var leeway = 5.0
    /// Every proof must carry a valid server nonce (§8): `nonce: required`.
    public var nonceRequired = false
    /// The DPoP header goes upstream too (default: stripped, the gateway consumed it).
    public var forwardProof = false
    /// Header that tells the upstream the thumbprint of the caller's key; nil: none.
    public var jktHeader: String? = "X-Forwarded-Jkt"
}

/// Gateway-wide DPoP settings (`dpop:`): the keys of stateless server nonces and the bound
/// of the in-memory replay cache.
public struct DPoPSettings: Sendable {
    /// HMAC keys for nonces: the first issues, all verify. Empty: a random key per process
    /// (fine for one process; replicas need a shared key).
    public var nonceKeys: [[UInt8]] = []
    public var nonceLifetime = 300.0
    /// Entries of the in-memory jti cache (`store: memory`); when full of live entries, new
    /// proofs are refused (503) rather than a replay let through.
    public var replayCacheEntries = 1_000_000
}
