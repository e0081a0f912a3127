import JOSE
import Reactor

/// Sessions in Redis: the cookie carries only the session's random id; Redis holds the
/// session sealed with the session keys (it never holds a readable token) under a key derived
/// from the id by SHA-256 (reading Redis does not yield cookie values). Sessions read are kept
/// on this worker for `cacheTTL` seconds, so a busy session costs no round trip per request;
/// an end (logout) reaches other workers and replicas within that time.
///
/// Every callback holds the store strongly until Redis answers: a config reload makes a new
/// store, and a request or refresh in flight on the old one must still get its answer.
final class RedisSessionStore: SessionStore {
    /// Sealed under its own purpose: a Redis value is never a valid session cookie.
    static let purpose = "session-redis"
    /// Longer than a refresh can take (the token endpoint's 10 s, a DPoP nonce retry, the save).
    static let leaseMilliseconds = 35_000
    private let client: Redis
    private let prefix: String
    private let sealer: CookieSealer
    private let cacheTTL: Int64
    private let wallClock: any WallClock
    private var cache: [String: (session: Session, until: Int64)] = [:]
    /// Each session's refresh generation as last read with it: the basis of a touch (see
    /// `saveUpdate`).
    private var generations: [String: String] = [:]
    /// The generation a refresh leader read after taking the lease (`reload`): the basis of
    /// its save, whatever other reads of the session happen on this worker meanwhile.
    private var refreshBasis: [String: String] = [:]
    private(set) var roundTrips = 0

    init(client: Redis, prefix: String, sealer: CookieSealer, cacheTTL: Double, wallClock: any WallClock) {
        self.client = client
        self.prefix = prefix
        self.sealer = sealer
        self.cacheTTL = Int64(cacheTTL)
        self.wallClock = wallClock
    }

    static func digest(_ text: String) -> String {
        Base64URL.encode(Array(Digest.sha256.hash(Array(text.utf8)).prefix(24)))
    }
    /// The session's keys share a hash tag (its id's digest): a Redis Cluster keeps them in
    /// one slot, so a script may touch the session and its refresh lease together.
    func key(_ id: String) -> String { "\(prefix)session:{\(Self.digest(id))}" }
    func leaseKey(_ id: String) -> String { "\(prefix)refresh-lock:{\(Self.digest(id))}" }
    /// How many refreshes the session has had (a refresh's save increments it).
    func generationKey(_ id: String) -> String { "\(prefix)session-gen:{\(Self.digest(id))}" }
    /// A client's sessions by AS session id or subject, for back-channel logout: a sorted set
    /// of session keys (not ids — those are cookie values) scored by when each began.
    func indexKey(_ mark: String) -> String { "\(prefix)sessions-of:" + Self.digest(mark) }

    func load(_ cookie: String, done: @escaping (SessionLookup) -> Void) {
        // A cookie is a session id: 22 base64url characters.
        guard cookie.utf8.count == 22, Base64URL.decode(cookie)?.count == 16 else {
            done(.none)
            return
        }
        let now = wallClock.seconds
        if let hit = cache[cookie], hit.until > now {
            done(.found(hit.session))
            return
        }
        fetch(cookie) { result in
            switch result {
            case .found(let s): done(.found(s))
            case .gone, .notKept: done(.none)
            case .unavailable: done(.unavailable(.unavailable("Redis did not answer")))
            }
        }
    }

    private func fetch(_ id: String, forRefresh: Bool = false, done: @escaping (ReloadResult) -> Void) {
        roundTrips += 1
        let now = wallClock.seconds
        client.send(["MGET", key(id), generationKey(id)]) { result in
            switch result {
            case .success(.array(let replies)) where replies.count == 2:
                guard case .bulk(let bytes) = replies[0] else {
                    done(replies[0] == .null ? .gone : .unavailable)
                    return
                }
                guard let plain = self.sealer.open(String(decoding: bytes, as: UTF8.self), purpose: Self.purpose),
                    let session = Session(encoded: plain), session.id == id
                else {
                    done(.gone)
                    return
                }
                var generation = "0"
                if case .bulk(let g) = replies[1] { generation = String(decoding: g, as: UTF8.self) }
                self.remember(generation: generation, of: id, forRefresh: forRefresh)
                self.remember(session, now: now)
                done(.found(session))
            case .success, .failure: done(.unavailable)
            }
        }
    }

    func save(
        _ session: Session, expiresAt: Int64, creating: Bool, lease: RefreshLease?,
        done: @escaping (Result<String, SessionStoreError>) -> Void
    ) {
        let now = wallClock.seconds
        guard let plain = session.encoded() else {
            done(.failure(.tooLarge))
            return
        }
        let sealed = sealer.seal(plain, purpose: Self.purpose)
        let ttl = max(1, expiresAt - now)
        roundTrips += 1
        guard creating else {
            saveUpdate(session, sealed: sealed, ttl: ttl, lease: lease, now: now, done: done)
            return
        }
        // NX: a new session never replaces one (ids are random; a collision is refused).
        client.send(["SET", key(session.id), sealed, "EX", String(ttl), "NX"]) { result in
            switch result {
            case .success(.status("OK")):
                self.remember(session, now: now)
                self.remember(generation: "0", of: session.id)
                // A session a back-channel logout cannot find would outlive it: the index
                // writes are part of creating one.
                self.index(session, ttl: ttl) { ok in
                    ok
                        ? done(.success(session.id))
                        : done(.failure(.notIndexed))
                }
            case .success(.null): done(.failure(.idTaken))
            case .success(let other): done(.failure(.unexpectedReply("\(other)")))
            case .failure(let e): done(.failure(.unavailable("\(e)")))
            }
        }
    }

    /// An update in one step on the server. `KEYS`: the session, its refresh lease, its
    /// generation. `ARGV`: the sealed session, its TTL, the generation the update was based
    /// on, the lease token ("" for an update that is not a refresh). It writes only if the
    /// session is still there (a logout meanwhile is not undone — nil, first) and nobody
    /// refreshed it since the update's basis was read — unless this is the refresh that holds
    /// the lease. Else -1: a touch from a stale copy, or a refresh that outlived its lease
    /// after another replica refreshed, would put back a spent refresh token. A refresh's
    /// write increments the generation; the answer is the generation now.
    static let saveUpdateScript = """
        if redis.call('EXISTS', KEYS[1]) == 0 then return false end
        local gen = redis.call('GET', KEYS[3]) or '0'
        if gen ~= ARGV[3] and (ARGV[4] == '' or redis.call('GET', KEYS[2]) ~= ARGV[4]) then return -1 end
        if not redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2], 'XX') then return false end
        if ARGV[4] == '' then return tonumber(gen) end
        local n = redis.call('INCR', KEYS[3])
        redis.call('EXPIRE', KEYS[3], ARGV[2])
        return n
        """

    private func saveUpdate(
        _ session: Session, sealed: String, ttl: Int64, lease: RefreshLease?, now: Int64,
        done: @escaping (Result<String, SessionStoreError>) -> Void
    ) {
        // A basis never read (forgotten) matches no generation: only a lease holder writes then.
        let basis = (lease != nil ? refreshBasis.removeValue(forKey: session.id) : generations[session.id]) ?? "unknown"
        client.send([
            "EVAL", Self.saveUpdateScript, "3", key(session.id), leaseKey(session.id), generationKey(session.id),
            sealed, String(ttl), basis, lease?.token ?? ""
        ]) { result in
            switch result {
            case .success(.integer(let n)) where n >= 0:
                self.remember(generation: String(n), of: session.id)
                self.remember(session, now: now)
                done(.success(session.id))
            case .success(.integer):
                self.cache[session.id] = nil
                self.generations[session.id] = nil
                done(.failure(.superseded))
            case .success(.null):
                self.cache[session.id] = nil
                done(.failure(.ended))
            case .success(let other): done(.failure(.unexpectedReply("\(other)")))
            case .failure(let e): done(.failure(.unavailable("\(e)")))
            }
        }
    }

    private func index(_ session: Session, ttl: Int64, done: @escaping (Bool) -> Void) {
        var marks = [LogoutMarks.sub(session.client, session.subject)]
        if let sid = session.claims["sid"]?.string { marks.append(LogoutMarks.sid(session.client, sid)) }
        var pending = marks.count * 2
        var ok = true
        for mark in marks {
            let k = indexKey(mark)
            for command in [["ZADD", k, String(session.createdAt), key(session.id)], ["EXPIRE", k, String(ttl), "GT"]] {
                client.send(command) { result in
                    if case .success(.integer) = result {
                    } else if case .success(.status) = result {
                    } else {
                        ok = false
                    }
                    pending -= 1
                    if pending == 0 { done(ok) }
                }
            }
        }
    }

    func end(_ session: Session, expiresAt: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        cache[session.id] = nil
        roundTrips += 1
        client.send(["DEL", key(session.id)]) { result in
            switch result {
            case .success(.integer): done(.success(()))
            case .success(let other): done(.failure(.unexpectedReply("\(other)")))
            case .failure(let e): done(.failure(.unavailable("\(e)")))
            }
        }
    }

    /// Deletes the sessions in the sid/sub indexes that began at or before `at`; later ones
    /// (a login after the logout) stay, and so do their index entries.
    func endAll(
        client name: String, sid: String?, sub: String?, at: Int64, expiresAt: Int64,
        done: @escaping (Result<Int, SessionStoreError>) -> Void
    ) {
        let marks = [sid.map { LogoutMarks.sid(name, $0) }, sub.map { LogoutMarks.sub(name, $0) }].compactMap { $0 }
        guard !marks.isEmpty else {
            done(.success(0))
            return
        }
        var keys = Set<String>()
        var pending = marks.count
        var failure: SessionStoreError?
        cache.removeAll()
        for mark in marks {
            let k = indexKey(mark)
            client.send(["ZRANGEBYSCORE", k, "-inf", String(at)]) { result in
                switch result {
                case .success(.array(let members)):
                    for case .bulk(let b) in members { keys.insert(String(decoding: b, as: UTF8.self)) }
                    self.client.send(["ZREMRANGEBYSCORE", k, "-inf", String(at)]) { _ in }
                case .success(let other): failure = .unexpectedReply("\(other)")
                case .failure(let e): failure = .unavailable("\(e)")
                }
                pending -= 1
                guard pending == 0 else { return }
                if let failure {
                    done(.failure(failure))
                    return
                }
                guard !keys.isEmpty else {
                    done(.success(0))
                    return
                }
                // One DEL per key: sessions live in different slots of a cluster.
                var left = keys.count
                var ended = 0
                var error: SessionStoreError?
                for k in keys.sorted() {
                    self.client.send(["DEL", k]) { result in
                        switch result {
                        case .success(.integer(let n)): ended += Int(n)
                        case .success(let other): error = .unexpectedReply("\(other)")
                        case .failure(let e): error = .unavailable("\(e)")
                        }
                        left -= 1
                        guard left == 0 else { return }
                        if let error {
                            done(.failure(error))
                        } else {
                            done(.success(ended))
                        }
                    }
                }
            }
        }
    }

    /// `SET NX PX`: a lease that expires by itself if its holder dies mid-refresh.
    func leaseRefresh(_ session: Session, done: @escaping (LeaseResult) -> Void) {
        let lease = RefreshLease(key: leaseKey(session.id), token: Base64URL.encode(SecureRandom.bytes(16)))
        client.send(["SET", lease.key, lease.token, "NX", "PX", String(Self.leaseMilliseconds)]) { result in
            switch result {
            case .success(.status("OK")): done(.acquired(lease))
            case .success(.null): done(.held)
            case .success, .failure: done(.unavailable)
            }
        }
    }

    /// Deletes the lease only if it is still this holder's (a compare-and-delete in one step).
    func releaseRefresh(_ lease: RefreshLease) {
        client.send([
            "EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end",
            "1", lease.key, lease.token
        ]) { _ in }
    }

    func reload(_ session: Session, done: @escaping (ReloadResult) -> Void) {
        cache[session.id] = nil
        fetch(session.id, forRefresh: true, done: done)
    }

    private func remember(generation: String, of id: String, forRefresh: Bool = false) {
        // Bounded; a forgotten generation costs one refused update (and a fresh read), never
        // a wrong write.
        if generations.count >= 10_000 { generations.removeAll() }
        generations[id] = generation
        if forRefresh {
            if refreshBasis.count >= 10_000 { refreshBasis.removeAll() }
            refreshBasis[id] = generation
        }
    }

    private func remember(_ session: Session, now: Int64) {
        guard cacheTTL > 0 else { return }
        if cache.count >= 10_000 { cache = cache.filter { $0.value.until > now } }
        if cache.count < 10_000 { cache[session.id] = (session, now + cacheTTL) }
    }
}
