/// A policy decision point that routes ask (`authorizers.NAME`, route key `authorize`): an
/// OpenID AuthZEN Authorization API 1.0 PDP, called once a request is authenticated with the
/// caller, the method and the route, and obeyed (allow, or 403).
struct AuthorizerConfig: Sendable, Equatable {
    var name: String
    /// The PDP's base URL, with a trailing `/`: its endpoints are below it (AuthZEN §6, §7:
    /// `access/v1/evaluation`, `access/v1/evaluations`) unless its metadata (§9,
    /// `.well-known/authzen-configuration`) names others.
    var url = ""
    var auth = AuthorizerAuth.none
    /// The most a request waits for the PDP's answer (connect included).
    var timeout = 0.3
    var cache = AuthorizerCache()
    var onError = AuthorizerOnError.deny
    var subject = AuthorizerSubject()
    /// `resource.properties.query`: the request's raw query goes in the question (and so in
    /// the cache's digest), for upstreams that act on it (`?action=delete`). Off, a decision
    /// for a path answers every query on it.
    var query = false
    /// CA bundle for an `https` PDP with a private CA; nil: the system's.
    var caFile: String?

    init(name: String) { self.name = name }

    var evaluationURL: String { url + "access/v1/evaluation" }
    var evaluationsURL: String { url + "access/v1/evaluations" }
    var metadataURL: String { url + ".well-known/authzen-configuration" }
}

/// How the gateway authenticates to the PDP.
enum AuthorizerAuth: Sendable, Equatable {
    case none
    /// `Authorization: Bearer` with the file's content, read again when the file changes (a
    /// mounted secret, a projected service-account token).
    case bearerFile(String)
    /// `Authorization: Bearer` with a token the gateway gets for itself with the client
    /// credentials grant (RFC 6749 §4.4) as one of its `clients:` (ClientCredentialsToken).
    case client(ClientCredentialsGrant)
}

/// Decisions kept per process and shared by its workers, by a digest of everything sent.
struct AuthorizerCache: Sendable, Equatable {
    var allowTTL = 10.0
    var denyTTL = 2.0
    var maxEntries = 100_000
}

/// What an unusable PDP answer (or none) comes to.
enum AuthorizerOnError: String, Sendable, Equatable {
    /// 403 `access_denied`, as a deny.
    case deny
    /// 503 `temporarily_unavailable` with `Retry-After`.
    case unavailable
}

/// The AuthZEN subject (§5.1) the gateway sends for the caller: its `type`, the claim that
/// is its `id`, and the claims sent as its properties.
struct AuthorizerSubject: Sendable, Equatable {
    var type = "identity"
    var idClaim = "sub"
    var properties: [String] = []
}
