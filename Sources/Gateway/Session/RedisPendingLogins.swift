import JOSE
import Reactor

/// Pending logins in Redis (replicas share them like sessions). Each pending login
/// gets a fresh random id (256 bits) that only this browser's login-state cookie holds (the
/// cookie: the ids of its pending logins, at most `max`, newest last — never an id the
/// request brought in alone, so a cookie planted by someone else names nothing of ours). The
/// login is its own key, derived by SHA-256 from its id and its `state`: the callback finds it
/// only with both — the state from the AS's redirect and the cookie of the browser that began
/// the login (a state replayed into another browser finds nothing: no login CSRF). `SET EX NX`
/// when begun, `GETDEL` at the callback: one use, in one step, whichever replica the browser
/// comes back to. The value is sealed with the session keys under a purpose bound to its key
/// (Redis never holds a readable PKCE verifier or nonce, and a value moved to another key
/// does not open).
///
/// Cost in Redis: one key per begun login, 300–3000 bytes (the return address is most of
/// it), for the login timeout — also for logins nobody finishes.
final class RedisPendingLogins: PendingLoginStore {
    private let client: Redis
    private let prefix: String
    private let sealer: CookieSealer
    private let cookieName: String
    private let secure: Bool
    private let timeout: Int64
    private let max: Int

    init(
        client: Redis, prefix: String, sealer: CookieSealer, cookieName: String, secure: Bool, timeout: Int64, max: Int
    ) {
        self.client = client
        self.prefix = prefix
        self.sealer = sealer
        self.cookieName = cookieName
        self.secure = secure
        self.timeout = timeout
        self.max = Swift.max(1, max)
    }

    /// A login id: 32 random bytes, 43 base64url characters.
    static func isLoginID(_ value: Substring) -> Bool {
        value.utf8.count == 43 && Base64URL.decode(String(value))?.count == 32
    }

    /// The ids the cookie holds (well-formed ones, the newest `max`).
    func ids(_ cookies: Cookies) -> [String] {
        guard let value = cookies.value(cookieName), value.utf8.count <= 44 * max else { return [] }
        var seen = Set<String>()
        let ids = value.split(separator: ".").filter(Self.isLoginID).map(String.init).filter {
            seen.insert($0).inserted
        }
        return Array(ids.suffix(max))
    }

    private func cookie(_ ids: [String], _ cookies: Cookies) -> [String] {
        if ids.isEmpty { return cookies.values[cookieName] == nil ? [] : cookies.clear(cookieName, secure: secure) }
        return cookies.set(cookieName, ids.joined(separator: "."), .init(secure: secure, maxAge: timeout)) ?? []
    }

    /// The key's last part; also bound into the sealed value's purpose.
    static func digest(id: String, state: String) -> String { RedisSessionStore.digest(id + "." + state) }
    func key(_ digest: String) -> String { "\(prefix)login-state:\(digest)" }
    static func purpose(_ digest: String) -> String { "login-state-redis:\(digest)" }

    func add(
        _ login: PendingLogins.Login, cookies: Cookies, now: Int64,
        done: @escaping (Result<[String], SessionStoreError>) -> Void
    ) {
        let id = Base64URL.encode(SecureRandom.bytes(32))
        var one = PendingLogins()
        one.logins = [login]
        let digest = Self.digest(id: id, state: login.state)
        let sealed = sealer.seal(one.json(), purpose: Self.purpose(digest))
        // The oldest pending logins drop out of the cookie (their keys expire by themselves).
        let setCookies = cookie(Array((ids(cookies) + [id]).suffix(max)), cookies)
        client.send(["SET", key(digest), sealed, "EX", String(Swift.max(1, timeout)), "NX"]) { result in
            switch result {
            case .success(.status("OK")): done(.success(setCookies))
            case .success(let other):
                done(.failure(.unexpectedReply("\(other)")))
            case .failure(let e): done(.failure(.unavailable("pending login not stored: \(e)")))
            }
        }
    }

    func take(
        state: String, cookies: Cookies, now: Int64,
        done: @escaping (Result<PendingLoginTake, SessionStoreError>) -> Void
    ) {
        let ids = ids(cookies)
        // Our states are 43 characters; anything far longer is not one (and is not hashed).
        guard !ids.isEmpty, !state.isEmpty, state.utf8.count <= 256 else {
            done(.success(PendingLoginTake(login: nil)))
            return
        }
        // One GETDEL per pending login of this browser, all at once: only the one whose id
        // began this state exists; the others are no-ops.
        var left = ids.count
        var found: (id: String, login: PendingLogins.Login?)?
        var failure: SessionStoreError?
        for id in ids {
            let digest = Self.digest(id: id, state: state)
            client.send(["GETDEL", key(digest)]) { [sealer, timeout] result in
                switch result {
                case .success(.bulk(let bytes)):
                    var pending = sealer.open(String(decoding: bytes, as: UTF8.self), purpose: Self.purpose(digest))
                        .flatMap(PendingLogins.init(json:))
                    found = (id, pending?.take(state: state, now: now, timeout: timeout))
                case .success(.null): break
                case .success(let other): failure = .unexpectedReply("\(other)")
                case .failure(let e): failure = .unavailable("pending login lookup: \(e)")
                }
                left -= 1
                guard left == 0 else { return }
                if let found {
                    // Used: its id leaves the cookie (a failure elsewhere does not bring it back).
                    done(
                        .success(
                            PendingLoginTake(
                                login: found.login, setCookies: self.cookie(ids.filter { $0 != found.id }, cookies),
                                handle: found.id)))
                } else if let failure {
                    done(.failure(failure))
                } else {
                    done(.success(PendingLoginTake(login: nil)))
                }
            }
        }
    }

    /// Stored again under the same id and state, for what is left of the login timeout; `NX`,
    /// so a login that is somehow back already is not overwritten. The browser's cookie still
    /// names the id (the caller did not send the take's Set-Cookie).
    func restore(_ taken: PendingLoginTake, now: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        guard let login = taken.login, let id = taken.handle else {
            done(.success(()))
            return
        }
        let left = timeout - (now - login.createdAt)
        guard left > 0 else {
            done(.success(()))
            return
        }
        var one = PendingLogins()
        one.logins = [login]
        let digest = Self.digest(id: id, state: login.state)
        let sealed = sealer.seal(one.json(), purpose: Self.purpose(digest))
        client.send(["SET", key(digest), sealed, "EX", String(left), "NX"]) { result in
            switch result {
            case .success(.status("OK")), .success(.null): done(.success(()))
            case .success(let other): done(.failure(.unexpectedReply("\(other)")))
            case .failure(let e): done(.failure(.unavailable("pending login not restored: \(e)")))
            }
        }
    }
}
