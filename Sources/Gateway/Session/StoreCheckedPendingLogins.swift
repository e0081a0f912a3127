import Reactor

/// Pending logins in the sealed cookie while sessions live in Redis (`pending_logins: cookie`
/// with a Redis store): beginning a login first asks Redis whether it answers (`PING`). Without
/// that, nothing asks the session store before the browser goes to the AS, and a browser would
/// be sent to sign in for a session that could then not be stored — a round trip to the AS
/// that can only end in 503, and a loop if the page is reloaded. Taking and restoring a
/// pending login need no Redis and go straight to the cookie.
final class StoreCheckedPendingLogins: PendingLoginStore {
    private let cookie: CookiePendingLogins
    private let client: Redis

    init(_ cookie: CookiePendingLogins, sessionStore client: Redis) {
        self.cookie = cookie
        self.client = client
    }

    func add(
        _ login: PendingLogins.Login, cookies: Cookies, now: Int64,
        done: @escaping (Result<[String], SessionStoreError>) -> Void
    ) {
        client.send(["PING"]) { [cookie] result in
            switch result {
            case .success(.status("PONG")): cookie.add(login, cookies: cookies, now: now, done: done)
            case .success(let other): done(.failure(.unexpectedReply("\(other)")))
            case .failure(let e): done(.failure(.unavailable("session store before a login: \(e)")))
            }
        }
    }

    func take(
        state: String, cookies: Cookies, now: Int64,
        done: @escaping (Result<PendingLoginTake, SessionStoreError>) -> Void
    ) {
        cookie.take(state: state, cookies: cookies, now: now, done: done)
    }

    func restore(_ taken: PendingLoginTake, now: Int64, done: @escaping (Result<Void, SessionStoreError>) -> Void) {
        cookie.restore(taken, now: now, done: done)
    }
}
