import Foundation
import JOSE
import OAuth
import Reactor

/// `auth: login` routes: the session cookie names a session; it must not be past its idle or
/// absolute timeout; its access token is refreshed shortly before it expires — once per
/// session, whatever number of requests and workers want it at that moment — and a refresh
/// that fails ends the session cleanly. Activity moves the idle deadline (re-sealing the
/// cookie at most once a minute, not on every request).
extension LoginService {
    enum SessionDecision {
        case allow(Session, setCookies: [String])
        /// No usable session; `clear`: Set-Cookie lines removing a dead one.
        case none(clear: [String])
        case unavailable(String)
    }

    func authenticate(route: RouteConfig, cookies: Cookies, done: @escaping (SessionDecision) -> Void) {
        guard let value = cookies.value(settings.sessionCookie) else { done(.none(clear: [])); return }
        let clear = cookies.clear(settings.sessionCookie, secure: settings.secure)
        store.load(value) { [weak self] lookup in
            guard let self else { return }
            switch lookup {
            case .unavailable(let why): done(.unavailable("session store: \(why)"))
            case .none: done(.none(clear: clear))
            case .found(let session):
                let now = Self.now()
                guard session.client == route.client,
                      now - session.createdAt < Int64(self.config.session.absoluteTimeout),
                      now - session.lastSeenAt < Int64(self.config.session.idleTimeout) else {
                    done(.none(clear: clear)); return
                }
                if let _ = session.refreshToken, now >= session.accessExpiresAt - Int64(self.config.session.refreshMargin) {
                    self.refresh(session, cookies: cookies, done: done)
                } else if now - session.lastSeenAt >= Int64(min(60, self.config.session.idleTimeout / 10)) {
                    var touched = session
                    touched.lastSeenAt = now
                    self.save(touched, cookies: cookies) { result in
                        switch result {
                        case .success(let lines): done(.allow(touched, setCookies: lines))
                        case .failure: done(.allow(session, setCookies: []))
                        }
                    }
                } else {
                    done(.allow(session, setCookies: []))
                }
            }
        }
    }

    private func refresh(_ session: Session, cookies: Cookies, done: @escaping (SessionDecision) -> Void) {
        let clear = cookies.clear(settings.sessionCookie, secure: settings.secure)
        // What a waiter (or a late request with the old cookie) does with the leader's outcome.
        let adopt: (RefreshCoordinator.Outcome) -> Void = { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .ended: done(.none(clear: clear))
            case .refreshed(let fresh):
                self.save(fresh, cookies: cookies) { result in
                    switch result {
                    case .success(let lines): done(.allow(fresh, setCookies: lines))
                    case .failure(let e): done(.unavailable(e.description))
                    }
                }
            }
        }
        switch shared.refreshes.join(session.id, loop: loop, done: adopt) {
        case .waiting: return
        case .finished(let outcome): adopt(outcome)
        case .leader:
            runRefresh(session) { [weak self] outcome in
                guard let self else { return }
                self.shared.refreshes.finish(session.id, outcome)
                if case .ended = outcome {
                    self.store.end(session, expiresAt: session.createdAt + Int64(self.config.session.absoluteTimeout)) { _ in }
                }
                adopt(outcome)
            }
        }
    }

    /// One refresh_token grant (RFC 6749 §6); a new ID token, if the AS sends one, must pass
    /// the same checks (OIDC Core §12.2: same iss and sub, no new nonce).
    private func runRefresh(_ session: Session, done: @escaping (RefreshCoordinator.Outcome) -> Void) {
        guard let (client, issuer, meta) = target(session.client), let endpoint = meta.tokenEndpoint, let rt = session.refreshToken else {
            done(.ended); return
        }
        server.token(endpoint, grant: [("grant_type", "refresh_token"), ("refresh_token", rt)], to: serverTarget(client, issuer)) { [weak self] result in
            guard let self else { return }
            let now = Self.now()
            switch result {
            case .failure(let f):
                self.log.info("session refresh failed; the session ends", metadata: ["error": .string(f.error), "client": .string(session.client)])
                done(.ended)
            case .success(let t):
                var fresh = session
                fresh.accessToken = self.keepAccessToken ? t.accessToken : nil
                fresh.accessExpiresAt = now + (t.expiresIn ?? 300)
                // RFC 6749 §6: a new refresh token replaces the old; none means keep the old.
                if let rt = t.refreshToken { fresh.refreshToken = rt }
                fresh.lastSeenAt = now
                if let idToken = t.idToken {
                    let verifier = IDTokenVerifier(issuer: issuer.issuer, clientID: client.authentication.clientID, algorithms: issuer.algorithms)
                    guard let keys = self.tokens.keys[issuer.name],
                          let claims = try? verifier.verify(idToken, keys: keys, nonce: nil, accessToken: t.accessToken, now: now),
                          claims["sub"]?.string == session.subject else {
                        self.log.warning("refreshed ID token refused; the session ends", metadata: ["client": .string(session.client)])
                        done(.ended); return
                    }
                    fresh.idToken = idToken
                    for name in claims.names where self.keptClaims.contains(name) { fresh.claims[name] = claims[name] }
                }
                done(.refreshed(fresh))
            }
        }
    }
}
