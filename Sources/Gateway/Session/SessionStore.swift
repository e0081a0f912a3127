/// Where sessions live. `CookieSessionStore`: in the browser's cookie itself, sealed (the
/// embedded default); `RedisSessionStore`: in Redis, the cookie holding only an opaque random
/// id. One code path uses either; both pass the same conformance suite.
protocol SessionStore: AnyObject {
    /// The session a cookie value names, if it is valid and not ended.
    func load(_ cookie: String, done: @escaping (SessionLookup) -> Void)
    /// Stores `session` until `expiresAt`; `done` gets the cookie value that names it.
    /// `creating`: a new session; otherwise an update, which must not bring back a session
    /// that was ended meanwhile (a logout on another worker or replica).
    func save(_ session: Session, expiresAt: Int64, creating: Bool, done: @escaping (Result<String, SessionStoreError>) -> Void)
    /// Ends the session everywhere (logout): a copy of the cookie no longer works.
    func end(_ session: Session, expiresAt: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void)
}

enum SessionLookup {
    case found(Session)
    /// No such session, tampered, foreign key, or ended.
    case none
    /// The store cannot answer: the caller fails closed (503), not "log in again".
    case unavailable(String)
}

struct SessionStoreError: Error, CustomStringConvertible {
    let description: String
    /// The session was ended (logout) while this update was on its way.
    var ended = false
}
