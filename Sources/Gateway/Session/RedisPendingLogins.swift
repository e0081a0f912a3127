import JOSE
import Reactor

/// Pending logins in Redis (issue 7: replicas share them like sessions). The browser's
/// login-state cookie holds only a random browser id (256 bits); each pending login is its
/// own key, derived by SHA-256 from that id and the login's `state`, so the callback finds it
/// only with both — the state from the AS's redirect and the cookie of the browser that began
/// the login (a state replayed into another browser finds nothing: no login CSRF). `SET EX NX`
/// when begun, `GETDEL` at the callback: one use, in one step, whichever replica the browser
/// comes back to. The value is sealed with the session keys under a purpose bound to its key
/// (Redis never holds a readable PKCE verifier or nonce, and a value moved to another key
/// does not open).
///
/// Not bounded per browser: the cookie no longer limits it, and a client that drops cookies
/// would not be bounded by a per-browser count anyway. Every key expires after the login
/// timeout.
final class RedisPendingLogins: PendingLoginStore {
    private let client: Redis
    private let prefix: String
    private let sealer: CookieSealer
    private let cookieName: String
    private let secure: Bool
    private let timeout: Int64

    init(client: Redis, prefix: String, sealer: CookieSealer, cookieName: String, secure: Bool, timeout: Int64) {
        self.client = client
        self.prefix = prefix
        self.sealer = sealer
        self.cookieName = cookieName
        self.secure = secure
        self.timeout = timeout
    }

    /// A browser id: 32 random bytes, 43 base64url characters.
    static func isBrowserID(_ value: String) -> Bool { value.utf8.count == 43 && Base64URL.decode(value)?.count == 32 }

    /// The key's last part; also bound into the sealed value's purpose.
    static func digest(browser: String, state: String) -> String { RedisSessionStore.digest(browser + "." + state) }
    func key(_ digest: String) -> String { "\(prefix)login-state:\(digest)" }
    static func purpose(_ digest: String) -> String { "login-state-redis:\(digest)" }

    func add(_ login: PendingLogins.Login, cookies: Cookies, now: Int64, done: @escaping (Result<[String], SessionStoreError>) -> Void) {
        let browser = cookies.value(cookieName).flatMap { Self.isBrowserID($0) ? $0 : nil } ?? Base64URL.encode(SecureRandom.bytes(32))
        var one = PendingLogins()
        one.logins = [login]
        let digest = Self.digest(browser: browser, state: login.state)
        let sealed = sealer.seal(one.json(), purpose: Self.purpose(digest))
        // The cookie is renewed with each login: it lives as long as the newest one.
        let setCookies = cookies.set(cookieName, browser, .init(secure: secure, maxAge: timeout)) ?? []
        client.send(["SET", key(digest), sealed, "EX", String(max(1, timeout)), "NX"]) { result in
            switch result {
            case .success(.status("OK")): done(.success(setCookies))
            case .success(let other): done(.failure(SessionStoreError(description: "pending login not stored: Redis answered \(other)")))
            case .failure(let e): done(.failure(SessionStoreError(description: "pending login not stored: \(e)")))
            }
        }
    }

    func take(state: String, cookies: Cookies, now: Int64, done: @escaping (Result<PendingLoginTake, SessionStoreError>) -> Void) {
        // Our states are 43 characters; anything far longer is not one (and is not hashed).
        guard let browser = cookies.value(cookieName), Self.isBrowserID(browser), !state.isEmpty, state.utf8.count <= 256 else {
            done(.success(PendingLoginTake(login: nil))); return
        }
        let digest = Self.digest(browser: browser, state: state)
        client.send(["GETDEL", key(digest)]) { [sealer, timeout] result in
            switch result {
            case .success(.bulk(let bytes)):
                guard let plain = sealer.open(String(decoding: bytes, as: UTF8.self), purpose: Self.purpose(digest)),
                      var pending = PendingLogins(json: plain) else {
                    done(.success(PendingLoginTake(login: nil))); return
                }
                done(.success(PendingLoginTake(login: pending.take(state: state, now: now, timeout: timeout))))
            case .success(.null): done(.success(PendingLoginTake(login: nil)))
            case .success(let other): done(.failure(SessionStoreError(description: "pending login lookup: Redis answered \(other)")))
            case .failure(let e): done(.failure(SessionStoreError(description: "pending login lookup: \(e)")))
            }
        }
    }
}
