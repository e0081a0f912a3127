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
}

/// A route's `auth: bearer` settings.
public struct BearerRouteConfig: Sendable {
    public var issuers: [String]
    public var requirement = AuthorizationRequirement()
    /// `access_token` in the query string is accepted (RFC 6750 §2.3; off by default).
    public var tokenInQuery = false
    /// The Authorization header goes upstream too (default: stripped).
    public var forwardToken = false
    public var realm = "tokengate"
}

