/// The embedded session store: the session is the cookie, sealed with AES-256-GCM. Nothing is
/// kept server-side but the ids of sessions ended by logout (`EndedSessions`), so one
/// process needs nothing else. One per worker: it remembers the sessions it has opened, by
/// cookie value — a sealed value always opens to the same session, so a browser's requests
/// cost one dictionary lookup instead of an AES-GCM open and a decode each; the ended check
/// still runs every time.
final class CookieSessionStore: SessionStore {
    static let purpose = "session"
    private let sealer: CookieSealer
    private let ended: EndedSessions
    private let wallClock: any WallClock
    private var opened: [SealedValue: Session] = [:]
    private var order: [SealedValue] = []
    private var head = 0
    static let openedCapacity = 4096

    init(sealer: CookieSealer, ended: EndedSessions, wallClock: any WallClock) {
        self.sealer = sealer
        self.ended = ended
        self.wallClock = wallClock
    }

    func load(_ cookie: String, done: @escaping (SessionLookup) -> Void) {
        if let session = opened[SealedValue(cookie)] {
            done(isEnded(session) ? .none : .found(session))
            return
        }
        guard let plain = sealer.open(cookie, purpose: Self.purpose), let session = Session(encoded: plain),
            !isEnded(session)
        else {
            done(.none)
            return
        }
        remember(cookie, session)
        done(.found(session))
    }

    private func isEnded(_ session: Session) -> Bool {
        let now = wallClock.seconds
        return ended.contains(session.id, now: now) || ended.loggedOut(session, now: now)
    }

    func endAll(
        client: String, sid: String?, sub: String?, at: Int64, expiresAt: Int64,
        done: @escaping (Result<Int, SessionStoreError>) -> Void
    ) {
        let now = wallClock.seconds
        if let sid { ended.mark(LogoutMarks.sid(client, sid), at: at, until: expiresAt, now: now) }
        if let sub { ended.mark(LogoutMarks.sub(client, sub), at: at, until: expiresAt, now: now) }
        done(.success(0))
    }

    func leaseRefresh(_ session: Session, done: @escaping (LeaseResult) -> Void) {
        done(.acquired(RefreshLease(key: session.id, token: "")))
    }

    func releaseRefresh(_ lease: RefreshLease) {}

    func reload(_ session: Session, done: @escaping (ReloadResult) -> Void) { done(.notKept) }

    private func remember(_ cookie: String, _ session: Session) {
        if opened.count >= Self.openedCapacity {
            opened[order[head]] = nil
            head += 1
            if head > 1024 && head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
        }
        let key = SealedValue(cookie)
        opened[key] = session
        order.append(key)
    }

    /// `lease` is not needed: this process's RefreshCoordinator is the only refresher.
    func save(
        _ session: Session, expiresAt: Int64, creating: Bool, lease: RefreshLease?,
        done: @escaping (Result<String, SessionStoreError>) -> Void
    ) {
        if !creating && ended.contains(session.id, now: wallClock.seconds) {
            done(.failure(.ended))
            return
        }
        guard let plain = session.encoded() else {
            done(.failure(.tooLarge))
            return
        }
        done(.success(sealer.seal(plain, purpose: Self.purpose)))
    }

    func end(_ session: Session, expiresAt: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        ended.end(session.id, until: expiresAt, now: wallClock.seconds)
        done(.success(()))
    }
}

/// A sealed cookie value as a cache key. Hashing a kilobytes-long value on every request
/// cost more than the rest of the session check; its tail (the end of the AES-GCM
/// ciphertext and tag, different for every seal) and its length are hashed instead.
/// Equality still compares the whole value: a hit is only ever the very same cookie.
struct SealedValue: Hashable {
    let value: String

    init(_ value: String) { self.value = value }

    func hash(into hasher: inout Hasher) {
        let utf8 = value.utf8
        hasher.combine(utf8.count)
        for byte in utf8.suffix(32) { hasher.combine(byte) }
    }

    static func == (a: SealedValue, b: SealedValue) -> Bool { a.value == b.value }
}
