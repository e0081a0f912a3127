/// The embedded session store: the session is the cookie, sealed with AES-256-GCM. Nothing is
/// kept server-side but the ids of sessions ended by logout (`EndedSessions`), so one
/// process needs nothing else.
final class CookieSessionStore: SessionStore {
    static let purpose = "session"
    private let sealer: CookieSealer
    private let ended: EndedSessions
    private let clock: () -> Int64

    init(sealer: CookieSealer, ended: EndedSessions, clock: @escaping () -> Int64) {
        self.sealer = sealer
        self.ended = ended
        self.clock = clock
    }

    func load(_ cookie: String, done: @escaping (SessionLookup) -> Void) {
        guard let plain = sealer.open(cookie, purpose: Self.purpose), let session = Session(encoded: plain),
              !ended.contains(session.id, now: clock()) else { done(.none); return }
        done(.found(session))
    }

    func save(_ session: Session, expiresAt: Int64, creating: Bool, done: @escaping (Result<String, SessionStoreError>) -> Void) {
        if !creating && ended.contains(session.id, now: clock()) { done(.failure(SessionStoreError(description: "session ended", ended: true))); return }
        guard let plain = session.encoded() else { done(.failure(SessionStoreError(description: "a session field is too large"))); return }
        done(.success(sealer.seal(plain, purpose: Self.purpose)))
    }

    func end(_ session: Session, expiresAt: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        ended.end(session.id, until: expiresAt, now: clock())
        done(.success(()))
    }
}
