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

    func save(_ session: Session, expiresAt: Int64, done: @escaping (Result<String, SessionStoreError>) -> Void) {
        done(.success(sealer.seal(session.encoded(), purpose: Self.purpose)))
    }

    func end(_ session: Session, expiresAt: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        ended.end(session.id, until: expiresAt, now: clock())
        done(.success(()))
    }
}
