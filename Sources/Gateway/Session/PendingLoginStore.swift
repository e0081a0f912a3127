/// Where the logins a browser has begun and not finished are kept until the AS sends it back.
/// `CookiePendingLogins`: in a sealed cookie (the embedded default, stateless — replicas that
/// share the session keys read each other's); `RedisPendingLogins`: in Redis, the cookie
/// holding only a random browser id. Either way a callback's `state` only counts in the
/// browser that began the login (no login CSRF), once, and within the login timeout.
protocol PendingLoginStore: AnyObject {
    /// Keeps `login` for the browser that sent `cookies`; `done` gets the Set-Cookie lines to
    /// send with the redirect to the AS, or an error when the store did not take it.
    func add(
        _ login: PendingLogins.Login, cookies: Cookies, now: Int64,
        done: @escaping (Result<[String], SessionStoreError>) -> Void)
    /// Removes and returns this browser's pending login for `state` (nil: none, already used,
    /// or timed out) with the Set-Cookie lines for what is left; an error when the store
    /// cannot answer (the caller fails closed with 503, not "start again").
    func take(
        state: String, cookies: Cookies, now: Int64,
        done: @escaping (Result<PendingLoginTake, SessionStoreError>) -> Void)
    /// Puts back a login `take` returned whose code could not be redeemed because the token
    /// endpoint was unreachable or failed (5xx): the AS gave no verdict on the code, so a
    /// reload of the callback may still finish the login while the code is valid (RFC 6749
    /// §4.1.2: a code is single-use and short-lived, and the AS judges that, not the gateway).
    /// The caller sends none of the take's Set-Cookie lines with such an answer.
    func restore(_ taken: PendingLoginTake, now: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void)
}

struct PendingLoginTake {
    var login: PendingLogins.Login?
    var setCookies: [String] = []
    /// The store's own handle on the login (Redis: the browser's id that keys it), for `restore`.
    var handle: String? = nil
}

/// Pending logins in the browser's login-state cookie, sealed with the session keys under
/// their own purpose. At most `max` at once and never more than one cookie: the oldest go
/// first (no cookie bomb).
final class CookiePendingLogins: PendingLoginStore {
    private let sealer: CookieSealer
    private let cookieName: String
    private let secure: Bool
    private let timeout: Int64
    private let max: Int

    init(sealer: CookieSealer, cookieName: String, secure: Bool, timeout: Int64, max: Int) {
        self.sealer = sealer
        self.cookieName = cookieName
        self.secure = secure
        self.timeout = timeout
        self.max = max
    }

    func add(
        _ login: PendingLogins.Login, cookies: Cookies, now: Int64,
        done: @escaping (Result<[String], SessionStoreError>) -> Void
    ) {
        var pending = read(cookies)
        pending.add(login, max: max, now: now, timeout: timeout)
        done(.success(write(pending, cookies)))
    }

    func take(
        state: String, cookies: Cookies, now: Int64,
        done: @escaping (Result<PendingLoginTake, SessionStoreError>) -> Void
    ) {
        var pending = read(cookies)
        let login = pending.take(state: state, now: now, timeout: timeout)
        done(.success(PendingLoginTake(login: login, setCookies: write(pending, cookies))))
    }

    /// The login never left the browser's cookie: without the take's Set-Cookie it is still there.
    func restore(_ taken: PendingLoginTake, now: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        done(.success(()))
    }

    private func read(_ cookies: Cookies) -> PendingLogins {
        guard let value = cookies.value(cookieName), let plain = sealer.open(value, purpose: PendingLogins.purpose)
        else { return PendingLogins() }
        return PendingLogins(json: plain) ?? PendingLogins()
    }

    private func write(_ pending: PendingLogins, _ cookies: Cookies) -> [String] {
        var pending = pending
        if pending.logins.isEmpty {
            return cookies.values[cookieName] == nil ? [] : cookies.clear(cookieName, secure: secure)
        }
        var sealed = sealer.seal(pending.json(), purpose: PendingLogins.purpose)
        while sealed.utf8.count > Cookies.chunkSize && pending.logins.count > 1 {
            pending.logins.removeFirst()
            sealed = sealer.seal(pending.json(), purpose: PendingLogins.purpose)
        }
        return cookies.set(cookieName, sealed, .init(secure: secure, maxAge: timeout)) ?? []
    }
}
