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
        /// The gateway cannot check the session now (503); `detail` is for the log only.
        case unavailable(UnavailableReason, detail: String)
    }

    func authenticate(route: LoginRouteConfig, cookies: Cookies, done: @escaping (SessionDecision) -> Void) {
        // Built only when a session is refused (formatting them cost more than opening one).
        let settings = settings
        let clear = { cookies.clear(settings.sessionCookie, secure: settings.secure, domain: settings.cookieDomain) }
        if cookies.isConflicting(settings.sessionCookie) {
            // Which of the two is ours cannot be told: neither is used, and both are cleared
            // (the one set for this host; a sibling domain's copy is not ours to reach).
            log.warning(
                "two different session cookie values: treated as no session, cookies cleared",
                metadata: ["cookie": .string(settings.sessionCookie)])
            done(.none(clear: clear()))
            return
        }
        guard let value = cookies.value(settings.sessionCookie) else {
            done(.none(clear: []))
            return
        }
        store.load(value) { [weak self] lookup in
            guard let self else { return }
            switch lookup {
            case .unavailable(let why): done(.unavailable(.sessionStoreUnavailable, detail: "session store: \(why)"))
            case .none: done(.none(clear: clear()))
            case .found(let session):
                let now = self.now
                // Another client's session: not for this route, but not ours to delete either
                // (a link to this route must not log the browser out of the other app).
                guard route.clients.contains(session.client) else {
                    done(.none(clear: []))
                    return
                }
                guard now - session.createdAt < Int64(self.config.session.absoluteTimeout),
                    now - session.lastSeenAt < Int64(self.config.session.idleTimeout)
                else {
                    done(.none(clear: clear()))
                    return
                }
                if session.refreshToken != nil,
                    now >= session.accessExpiresAt - Int64(self.config.session.refreshMargin)
                {
                    self.refresh(session, cookies: cookies, forwardsToken: route.forwardSessionToken, done: done)
                } else if now - session.lastSeenAt >= Int64(min(60, self.config.session.idleTimeout / 10)) {
                    var touched = session
                    touched.lastSeenAt = now
                    self.save(touched, cookies: cookies, creating: false) { result in
                        switch result {
                        case .success(let lines): done(.allow(touched, setCookies: lines))
                        case .failure(.ended): done(.none(clear: clear()))
                        case .failure: done(.allow(session, setCookies: []))
                        }
                    }
                } else {
                    done(.allow(session, setCookies: []))
                }
            }
        }
    }

    /// `forClaimsChange`: a Shared Signals `token-claims-change` asked for it; the session
    /// then records when (`refreshedAt`). Only then: sessions that carry it cannot be read by
    /// releases before it.
    func refresh(
        _ session: Session, cookies: Cookies, forwardsToken: Bool, forClaimsChange: Bool = false,
        done: @escaping (SessionDecision) -> Void
    ) {
        let clear = cookies.clear(settings.sessionCookie, secure: settings.secure, domain: settings.cookieDomain)
        // What a waiter (or a late request with the old cookie) does with the outcome; once,
        // whichever comes first: the outcome or the waiter's deadline.
        let answered = AnsweredOnce()
        let adopt: (RefreshCoordinator.Outcome) -> Void = { [weak self] outcome in
            guard let self, answered.first() else { return }
            switch outcome {
            case .ended: done(.none(clear: clear))
            case .unchanged where forwardsToken && self.now >= session.accessExpiresAt:
                // The session goes on (the AS or the store is down, not the user's login), but
                // an expired access token is not sent upstream: try again shortly.
                done(.unavailable(.tokenNotRefreshed, detail: "the access token expired and could not be refreshed"))
            case .unchanged: done(.allow(session, setCookies: []))
            case .current(let stored), .unsaved(let stored): done(.allow(stored, setCookies: []))
            case .refreshed(let fresh):
                self.save(fresh, cookies: cookies, creating: false) { result in
                    switch result {
                    case .success(let lines): done(.allow(fresh, setCookies: lines))
                    case .failure(.ended): done(.none(clear: clear))
                    case .failure(let e): done(.unavailable(.sessionNotSaved, detail: e.description))
                    }
                }
            }
        }
        switch shared.refreshes.join(session.id, loop: loop, done: adopt) {
        case .waiting:
            // A leader that never finishes (it should not happen) must not hold its waiters.
            loop.schedule(after: 12) { adopt(.unchanged) }
        case .finished(let outcome): adopt(outcome)
        case .leader:
            lead(session, cookies: cookies, clear: clear, forClaimsChange: forClaimsChange, adopt: adopt, done: done)
        }
    }

    /// This process's one refresher; across replicas, only the holder of the store's lease
    /// refreshes, the others wait for the session it writes. A store that does not answer is
    /// never a reason to end a session: it goes on as it is, and a later request tries again.
    private func lead(
        _ session: Session, cookies: Cookies, clear: [String], forClaimsChange: Bool,
        adopt: @escaping (RefreshCoordinator.Outcome) -> Void, done: @escaping (SessionDecision) -> Void
    ) {
        let started = ProcessInfo.processInfo.systemUptime
        let finish: (RefreshCoordinator.Outcome) -> Void = { [weak self] outcome in
            guard let self else { return }
            self.shared.refreshes.finish(
                session.id, outcome, took: ProcessInfo.processInfo.systemUptime - started)
            if case .ended = outcome {
                self.store.end(session, expiresAt: session.createdAt + Int64(self.config.session.absoluteTimeout)) {
                    _ in
                }
            }
            adopt(outcome)
        }
        store.leaseRefresh(session) { [weak self] leaseResult in
            guard let self else { return }
            switch leaseResult {
            case .unavailable: finish(.unchanged)
            case .held: self.awaitRefresh(session, deadline: self.now + 5, done: finish)
            case .acquired(let lease):
                // The session may have been refreshed by another replica between our read (a
                // cache, perhaps) and the lease: read it again before using its refresh token.
                self.store.reload(session) { reloaded in
                    switch reloaded {
                    case .found(let stored) where Self.wasRefreshed(stored, since: session):
                        self.store.releaseRefresh(lease)
                        finish(.current(stored))
                    case .gone:
                        self.store.releaseRefresh(lease)
                        finish(.ended)
                    case .unavailable:
                        self.store.releaseRefresh(lease)
                        finish(.unchanged)
                    case .found, .notKept:
                        // A store that keeps the session (Redis) has it once this save is done:
                        // the waiters adopt it as it is. The sealed cookie is per browser: each
                        // waiter seals its own.
                        let kept: Bool
                        if case .found = reloaded { kept = true } else { kept = false }
                        self.runRefresh(session, forClaimsChange: forClaimsChange) { outcome in
                            guard case .refreshed(let fresh) = outcome else {
                                self.store.releaseRefresh(lease)
                                finish(outcome)
                                return
                            }
                            // Saved before the lease goes, so the waiting replicas read the new session.
                            self.save(fresh, cookies: cookies, creating: false, lease: lease) { result in
                                self.store.releaseRefresh(lease)
                                switch result {
                                case .success:
                                    self.shared.refreshes.finish(session.id, kept ? .current(fresh) : .refreshed(fresh))
                                case .failure(.ended): self.shared.refreshes.finish(session.id, .ended)
                                // Not stored (the store failed, or another replica refreshed
                                // since): the new tokens serve the requests waiting now.
                                case .failure: self.shared.refreshes.finish(session.id, .unsaved(fresh))
                                }
                                switch result {
                                case .success(let lines): done(.allow(fresh, setCookies: lines))
                                case .failure(.ended): done(.none(clear: clear))
                                case .failure(.superseded):
                                    // The refresh outlived its lease and another replica refreshed
                                    // since: this request goes on with the tokens it got; the store
                                    // keeps the other replica's.
                                    self.log.warning(
                                        "a session refresh outlived its lease and another replica refreshed; its result was not stored"
                                    )
                                    done(.allow(fresh, setCookies: []))
                                case .failure(let e): done(.unavailable(.sessionNotSaved, detail: e.description))
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The claims that say how and when the user authenticated (OIDC Core §2).
    static let authenticationClaims = ["acr", "amr", "auth_time"]

    static func wasRefreshed(_ stored: Session, since old: Session) -> Bool {
        stored.refreshToken != old.refreshToken || stored.accessExpiresAt > old.accessExpiresAt
    }

    /// Another replica holds the refresh lease: read the store until its refreshed session
    /// is there (or the wait is over: the session then goes on as it was).
    private func awaitRefresh(_ session: Session, deadline: Int64, done: @escaping (RefreshCoordinator.Outcome) -> Void)
    {
        store.reload(session) { [weak self] stored in
            guard let self else { return }
            switch stored {
            case .found(let s) where Self.wasRefreshed(s, since: session):
                done(.current(s))
                return
            case .gone:
                done(.ended)
                return
            case .notKept:
                done(.unchanged)
                return
            case .found, .unavailable: break
            }
            guard self.now < deadline else {
                done(.unchanged)
                return
            }
            self.loop.schedule(after: 0.1) { self.awaitRefresh(session, deadline: deadline, done: done) }
        }
    }

    /// One refresh_token grant (RFC 6749 §6). Only a refusal of the grant ends the session
    /// (RFC 6749 §5.2 `invalid_grant`, or another 4xx error) — and not before the store is
    /// read again: another replica may have refreshed (rotated) it a moment ago. A new ID
    /// token, if the AS sends one, must pass the same checks (OIDC Core §12.2: same sub).
    private func runRefresh(
        _ session: Session, forClaimsChange: Bool, done: @escaping (RefreshCoordinator.Outcome) -> Void
    ) {
        guard let (client, issuer, meta) = target(session.client), let endpoint = meta.tokenEndpoint,
            let rt = session.refreshToken
        else {
            done(.unchanged)
            return
        }
        server.token(
            endpoint, grant: [("grant_type", "refresh_token"), ("refresh_token", rt)], to: serverTarget(client, issuer)
        ) { [weak self] result in
            guard let self else { return }
            let now = self.now
            switch result {
            case .failure(let f) where f.isTemporary:
                self.log.warning(
                    "session refresh: the AS could not be asked; the session goes on",
                    metadata: ["error": .string(f.error)])
                done(.unchanged)
            case .failure(let f):
                self.store.reload(session) { reloaded in
                    switch reloaded {
                    case .found(let current) where current.refreshToken != rt:
                        done(.current(current))  // refreshed elsewhere meanwhile
                    case .unavailable:
                        done(.unchanged)
                    default:
                        self.log.info(
                            "session refresh refused; the session ends",
                            metadata: ["error": .string(f.error), "client": .string(session.client)])
                        done(.ended)
                    }
                }
            case .success(let t):
                var fresh = session
                fresh.accessToken = self.keepAccessToken ? t.accessToken : nil
                fresh.accessExpiresAt = Self.expiry(t.expiresIn, now: now)
                if forClaimsChange { fresh.refreshedAt = now }
                // RFC 6749 §6: a new refresh token replaces the old; none means keep the old.
                if let rt = t.refreshToken { fresh.refreshToken = rt }
                fresh.lastSeenAt = now
                if let idToken = t.idToken {
                    let verifier = issuer.idTokenVerifier(clientID: client.authentication.clientID)
                    guard let keys = self.tokens.issuerKeys[issuer: issuer.name],
                        let claims = try? verifier.verify(
                            idToken, keys: keys, nonce: nil, accessToken: t.accessToken, now: now),
                        claims["sub"]?.string == session.subject
                    else {
                        self.log.warning(
                            "refreshed ID token refused; the session ends",
                            metadata: ["client": .string(session.client)])
                        done(.ended)
                        return
                    }
                    fresh.idToken = idToken
                    // The new token's claims replace the old ones: a group removed at the AS is
                    // gone, and its distributed claims are had again (once per refresh).
                    self.claimsSources.resolveDistributedClaims(
                        claims, accessToken: t.accessToken, for: self.claimsClient(client, issuer)
                    ) { [fresh] resolved in
                        var refreshed = fresh
                        refreshed.claims = self.sessionClaims(resolved, t, client)
                        // OIDC Core §12.2: a refresh is no authentication, and a refreshed ID
                        // token's auth_time is the original one's. The session keeps what its
                        // login said: a refresh can neither drop a step-up nor claim one.
                        for name in Self.authenticationClaims { refreshed.claims[name] = session.claims[name] }
                        self.claimsSources.refreshUserinfo(
                            refreshed, previous: session, accessToken: t.accessToken,
                            for: self.claimsClient(client, issuer), done: done)
                    }
                    return
                } else if let scope = t.scope, self.keptClaims.contains("scope") {
                    fresh.claims["scope"] = .string(scope)
                }
                self.claimsSources.refreshUserinfo(
                    fresh, previous: session, accessToken: t.accessToken, for: self.claimsClient(client, issuer),
                    done: done)
            }
        }
    }
}

/// What a new or refreshed session keeps, and storing it.
extension LoginService {
    /// The claims a session keeps: those its routes' headers and requirements use, the scope
    /// the token response granted, and `email` only when the AS says it is verified (an
    /// upstream reading X-Forwarded-Email trusts it as oauth2-proxy's users always have); and
    /// the record of distributed claims (OIDC Core §5.6.2), when there are any.
    func sessionClaims(_ idClaims: JSONObject, _ t: TokenResponse, _ client: ClientConfig) -> JSONObject {
        var kept = JSONObject()
        for name in idClaims.names where keptClaims.contains(name) || name == DistributedClaims.record {
            kept[name] = idClaims[name]
        }
        if kept["email"] != nil && idClaims["email_verified"] != .bool(true) && !client.login.allowUnverifiedEmail {
            kept["email"] = nil
        }
        if keptClaims.contains("scope"), let scope = t.scope { kept["scope"] = .string(scope) }
        return kept
    }

    /// When an access token expires: `expires_in` taken within [0 s, 1 day] (an AS answer is
    /// input, and a huge value must neither overflow nor keep a token forever).
    static func expiry(_ expiresIn: Int64?, now: Int64) -> Int64 {
        now + min(max(expiresIn ?? 300, 0), 86_400)
    }

    /// The session the browser's cookie named before this login (a step-up's weaker one, or
    /// another client's), ended once the new one is saved: in Redis it would otherwise stay
    /// usable, by whoever holds that cookie's value, until it expired; a sealed cookie's id
    /// joins the ended ones. Best effort: the new session stands either way.
    func endReplaced(_ cookies: Cookies, by new: Session) {
        guard let value = cookies.value(settings.sessionCookie) else { return }
        store.load(value) { [weak self] lookup in
            guard let self, case .found(let old) = lookup, old.id != new.id else { return }
            self.store.end(old, expiresAt: old.createdAt + Int64(self.config.session.absoluteTimeout)) {
                [log] result in
                if case .failure(let e) = result {
                    log.warning("the replaced session was not ended", metadata: ["error": "\(e)"])
                }
            }
        }
    }

    /// Stores `session` and returns its Set-Cookie lines.
    func save(
        _ session: Session, cookies: Cookies, creating: Bool, lease: RefreshLease? = nil,
        done: @escaping (Result<[String], SessionFailure>) -> Void
    ) {
        let expiresAt = session.createdAt + Int64(config.session.absoluteTimeout)
        store.save(session, expiresAt: expiresAt, creating: creating, lease: lease) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let e): done(.failure(SessionFailure(e)))
            case .success(let value):
                guard let lines = self.sessionCookies(value, cookies) else {
                    done(.failure(.doesNotFitInCookies))
                    return
                }
                if lines.count > 1 && value.utf8.count > Cookies.chunkSize {
                    self.log.warning(
                        "a session needed \(lines.count) cookies; a Redis store (store: redis://…) keeps only an id in the cookie",
                        metadata: ["bytes": .stringConvertible(value.utf8.count)])
                }
                done(.success(lines))
            }
        }
    }
}

/// A callback that must run once although two paths may reach it (an outcome and a deadline).
final class AnsweredOnce {
    private var done = false
    func first() -> Bool {
        if done { return false }
        done = true
        return true
    }
}
