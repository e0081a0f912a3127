import JOSE

/// A logged-in browser: who it is, the claims its routes' headers need, and the tokens to
/// keep it going. Only what is needed is kept (the rule: it must fit one cookie in
/// the default setup). Encoded compactly (SessionEncoding) inside the sealed cookie or Redis value.
struct Session: Sendable, Equatable {
    /// Random, 128 bits: names the session in the store, the refresh lock, revocation.
    var id: String
    /// `clients:` name it was made for.
    var client: String
    var subject: String
    /// The ID token claims the routes' identity headers use (plus sub and sid).
    var claims: JSONObject
    /// For RP-initiated logout's id_token_hint.
    var idToken: String?
    var accessToken: String?
    var refreshToken: String?
    /// When the access token expires (refresh before then).
    var accessExpiresAt: Int64
    var createdAt: Int64
    var lastSeenAt: Int64
    /// Set when a refresh kept the previous userinfo claims because the userinfo endpoint could
    /// not be reached: they may be stale, and are kept until the next refresh at most.
    var userinfoStaleSince: Int64? = nil
    /// When its tokens were last refreshed: a Shared Signals `token-claims-change` after it has
    /// the session refresh them again.
    var refreshedAt: Int64? = nil

    static func newID() -> String { Base64URL.encode(SecureRandom.bytes(16)) }

    /// The sealed form's plaintext (SessionEncoding).
    func encoded() -> [UInt8]? { SessionEncoding.encode(self) }

    init(
        id: String, client: String, subject: String, claims: JSONObject, idToken: String?, accessToken: String?,
        refreshToken: String?, accessExpiresAt: Int64, createdAt: Int64, lastSeenAt: Int64
    ) {
        self.id = id
        self.client = client
        self.subject = subject
        self.claims = claims
        self.idToken = idToken
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessExpiresAt = accessExpiresAt
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
    }

    init?(encoded: [UInt8]) {
        guard let s = SessionEncoding.decode(encoded) else { return nil }
        self = s
    }
}
