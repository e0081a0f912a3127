/// Where sessions live. `CookieSessionStore`: in the browser's cookie itself, sealed (the
/// embedded default); `RedisSessionStore`: in Redis, the cookie holding only an opaque random
/// id. One code path uses either; both pass the same conformance suite.
protocol SessionStore: AnyObject {
    /// The session a cookie value names, if it is valid and not ended.
    func load(_ cookie: String, done: @escaping (SessionLookup) -> Void)
    /// Stores `session` until `expiresAt`; `done` gets the cookie value that names it.
    /// `creating`: a new session; otherwise an update, which must not bring back a session
    /// that was ended meanwhile (a logout on another worker or replica). With `lease`: only
    /// while that refresh lease is still held (a refresh that outlived its lease must not
    /// overwrite the session another replica refreshed since).
    func save(
        _ session: Session, expiresAt: Int64, creating: Bool, lease: RefreshLease?,
        done: @escaping (Result<String, SessionStoreError>) -> Void)
    /// Ends the session everywhere (logout): a copy of the cookie no longer works.
    func end(_ session: Session, expiresAt: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void)
    /// Ends every session of `client` that the AS session `sid` or the subject `sub` names,
    /// begun before `at` (OIDC Back-Channel Logout 1.0 §2.7). `done` gets how many it knows
    /// it ended (the embedded store cannot count cookies it never sees: 0).
    func endAll(
        client: String, sid: String?, sub: String?, at: Int64, expiresAt: Int64,
        done: @escaping (Result<Int, SessionStoreError>) -> Void)
    /// Across replicas, one refresh per session: a lease held while refreshing. Stores that
    /// live in one process grant it at once (the process-wide RefreshCoordinator serializes).
    func leaseRefresh(_ session: Session, done: @escaping (LeaseResult) -> Void)
    func releaseRefresh(_ lease: RefreshLease)
    /// The session as the store holds it now, past any cache (after another replica refreshed
    /// it).
    func reload(_ session: Session, done: @escaping (ReloadResult) -> Void)
}

extension SessionStore {
    func save(
        _ session: Session, expiresAt: Int64, creating: Bool,
        done: @escaping (Result<String, SessionStoreError>) -> Void
    ) {
        save(session, expiresAt: expiresAt, creating: creating, lease: nil, done: done)
    }
}

enum LeaseResult {
    case acquired(RefreshLease)
    /// Another replica is refreshing this session.
    case held
    /// The store did not answer: not a reason to end anything.
    case unavailable
}

enum ReloadResult {
    case found(Session)
    /// The store no longer has it (ended).
    case gone
    case unavailable
    /// The store keeps nothing server-side (the sealed cookie).
    case notKept
}

/// A held refresh lease: released only by its holder (the token proves it).
struct RefreshLease {
    let key: String
    let token: String
}

/// What a back-channel logout ended, as keys of `EndedSessions` (embedded store).
enum LogoutMarks {
    static func sid(_ client: String, _ sid: String) -> String { "sid\u{0}\(client)\u{0}\(sid)" }
    static func sub(_ client: String, _ sub: String) -> String { "sub\u{0}\(client)\u{0}\(sub)" }
}

enum SessionLookup {
    case found(Session)
    /// No such session, tampered, foreign key, or ended.
    case none
    /// The store cannot answer: the caller fails closed (503), not "log in again".
    case unavailable(SessionStoreError)
}
