import Foundation
import JOSE
import OAuth

/// The redirect back from the AS: the response must answer a login this browser began (its
/// `state` in the browser's login-state cookie), come from the right AS (RFC 9207 `iss`),
/// and its code must buy an ID token that passes OIDC Core §3.1.3.7 with this login's nonce.
/// Then the session starts and the browser goes where it wanted to go.
extension LoginService {
    struct CallbackTiming {
        var tokenEndpointSeconds = 0.0
    }

    func callback(
        query: Substring, origin: RequestOrigin.Origin?, cookies: Cookies, clock: @escaping () -> Double,
        done: @escaping (GatewayResponse, CallbackTiming) -> Void
    ) {
        let timing = CallbackTiming()
        func fail(
            _ status: Int, _ message: String, _ detail: String, reason: String, cookies setCookies: [String] = []
        ) {
            done(signInFailed(status, message, detail, reason: reason, cookies: setCookies), timing)
        }
        // The state first: it says which login (and so which client and AS) this answers.
        // A JARM response carries it inside its JWT, read unverified only to find the login
        // (LoginService+ResponseMode.swift verifies it before anything in it is used).
        guard let pairs = FormEncoding.decode(query),
            let state = pairs.first(where: { $0.0 == "state" })?.1
                ?? pairs.first(where: { $0.0 == "response" }).flatMap({ JARMResponse.unverifiedState($0.1) })
        else {
            fail(
                400, "The sign-in response was not valid.", "callback without state",
                reason: LoginFailure.noState.code)
            return
        }
        pendingLogins.take(state: state, cookies: cookies, now: self.now) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let e):
                // Nothing was taken: a reload of this very callback can still finish the login.
                done(
                    Self.unavailable(
                        "login state: \(e)", reason: LoginFailure.loginStateUnavailable.code,
                        retry: self.callbackRetry(query)), timing)
            case .success(let taken):
                guard let login = taken.login else {
                    fail(
                        400, "This sign-in was not started in this browser, or it took too long. Please start again.",
                        "no pending login for this state (cookie missing, replayed or expired)",
                        reason: LoginFailure.noPendingLogin.code, cookies: taken.setCookies)
                    return
                }
                self.finishCallback(
                    query: query, login: login, taken: taken, origin: origin, cookies: cookies,
                    clock: clock,
                    timing: timing, done: done)
            }
        }
    }

    /// A failed callback's page, with a way to start again.
    private func signInFailed(
        _ status: Int, _ message: String, _ detail: String, reason: String, cookies: [String]
    ) -> GatewayResponse {
        var r = GatewayResponse.page(
            status, title: "Sign-in failed", message: message,
            link: (text: "Sign in again", href: config.login.startPath), cookies: cookies, detail: detail)
        r.reason = reason
        return r
    }

    /// The rest of a callback whose state named a pending login of this browser.
    private func finishCallback(
        query: Substring, login: PendingLogins.Login, taken: PendingLoginTake, origin: RequestOrigin.Origin?,
        cookies: Cookies,
        clock: @escaping () -> Double, timing: CallbackTiming, done: @escaping (GatewayResponse, CallbackTiming) -> Void
    ) {
        guard let (client, issuer, meta) = target(login.client) else {
            unavailableKeepingLogin(
                taken, query: query, "login client \(login.client): metadata not loaded",
                reason: LoginFailure.metadataNotLoaded.code, timing: timing, done: done)
            return
        }
        authorizationResponse(query: query, client: client, issuer: issuer, meta: meta) { [weak self] parsed in
            guard let self else { return }
            self.redeem(
                parsed, login: login, taken: taken, client: client, issuer: issuer, meta: meta, origin: origin,
                cookies: cookies, query: query, clock: clock, timing: timing, done: done)
        }
    }

    /// The code was not redeemed: the pending login goes back, and the page offers this same
    /// callback again (no Set-Cookie of the take, so the browser keeps its login state).
    private func unavailableKeepingLogin(
        _ taken: PendingLoginTake, query: Substring, _ detail: String, reason: String, timing: CallbackTiming,
        done: @escaping (GatewayResponse, CallbackTiming) -> Void
    ) {
        pendingLogins.restore(taken, now: now) { [weak self] restored in
            guard let self else { return }
            if case .failure(let e) = restored {
                self.log.warning(
                    "pending login not restored after a failed code exchange", metadata: ["error": .string("\(e)")])
            }
            done(Self.unavailable(detail, reason: reason, retry: self.callbackRetry(query)), timing)
        }
    }

    /// The code of a verified authorization response, redeemed at the token endpoint; then the
    /// session.
    private func redeem(
        _ parsed: Result<AuthorizationResponse, ResponseRefusal>, login: PendingLogins.Login,
        taken: PendingLoginTake, client: ClientConfig, issuer: IssuerConfig, meta: ProviderMetadata,
        origin: RequestOrigin.Origin?, cookies: Cookies, query: Substring, clock: @escaping () -> Double,
        timing: CallbackTiming, done: @escaping (GatewayResponse, CallbackTiming) -> Void
    ) {
        var timing = timing
        let setLogin = taken.setCookies
        func unavailableKeepingLogin(_ detail: String, reason: String) {
            self.unavailableKeepingLogin(taken, query: query, detail, reason: reason, timing: timing, done: done)
        }
        func fail(
            _ status: Int, _ message: String, _ detail: String, reason: String, cookies setCookies: [String] = []
        ) {
            done(signInFailed(status, message, detail, reason: reason, cookies: setCookies), timing)
        }
        let response: AuthorizationResponse
        switch parsed {
        case .failure(.keysUnavailable(let why)):
            unavailableKeepingLogin(why, reason: LoginFailure.metadataNotLoaded.code)
            return
        case .failure(.notVerified(let why)):
            fail(
                400, "The sign-in response was not valid.", "response JWT refused: \(why)",
                reason: LoginFailure.responseJWTRefused.code, cookies: setLogin)
            return
        case .failure(.response(.issuerMismatch)):
            fail(
                400, "The sign-in response came from an unexpected server.",
                "iss missing or not \(issuer.issuer) (RFC 9207)", reason: LoginFailure.issuerMismatch.code,
                cookies: setLogin)
            return
        case .failure(.response(.malformed(let why))):
            fail(
                400, "The sign-in response was not valid.", why, reason: LoginFailure.malformedResponse.code,
                cookies: setLogin)
            return
        case .success(let r): response = r
        }
        let code: String
        switch response {
        case .error(let error, _, _):
            // Shown, not retried: a login the AS refused must not loop back into another.
            fail(
                403, "The sign-in was not completed (\(error)).", "authorization error: \(error)",
                reason: LoginFailure.authorizationError.code, cookies: setLogin)
            return
        case .code(let c, let state):
            // The login was found by this state; a response answering another is not its answer.
            guard state == login.state else {
                fail(
                    400, "The sign-in response was not valid.", "the response's state is not the login's",
                    reason: LoginFailure.malformedResponse.code, cookies: setLogin)
                return
            }
            code = c
        }
        guard let tokenEndpoint = meta.tokenEndpoint, let redirect = redirectURI(client, origin: origin) else {
            done(
                Self.unavailable("no token endpoint or redirect URI", reason: LoginFailure.noTokenEndpoint.code),
                timing)
            return
        }
        let grant = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect),
            ("code_verifier", login.codeVerifier)
        ]
        let started = clock()
        server.token(tokenEndpoint, grant: grant, to: serverTarget(client, issuer)) { [weak self] result in
            guard let self else { return }
            timing.tokenEndpointSeconds = clock() - started
            switch result {
            case .failure(let f) where f.isTemporary:
                // Unreachable, timed out, cut short, or a 5xx: no verdict on the code.
                unavailableKeepingLogin(
                    "token endpoint: \(f.error)", reason: LoginFailure.tokenEndpointUnreachable.code)
            case .failure(let f):
                fail(
                    400, "The sign-in could not be completed.", "token endpoint refused the code: \(f.error)",
                    reason: LoginFailure.codeRefused.code, cookies: setLogin)
            case .success(let tokens):
                self.startSession(tokens, login: login, client: client, issuer: issuer, cookies: cookies) { outcome in
                    switch outcome {
                    case .failure(let why) where why.isUnavailable:
                        // The code is spent: trying again means a new login to the same place.
                        done(
                            Self.unavailable(
                                why.description, reason: why.code,
                                retry: self.startRetry(returnTo: login.returnTo, client: login.client)), timing)
                    case .failure(.authenticationInsufficient(let why)):
                        // OIDC Core §3.1.2.1: the AS did not authenticate the user as asked.
                        fail(
                            403, "The sign-in did not meet the authentication this page needs.",
                            SessionFailure.authenticationInsufficient(why).description,
                            reason: SessionFailure.authenticationInsufficient(why).code, cookies: setLogin)
                    case .failure(let why):
                        fail(
                            400, "The sign-in could not be completed.", why.description, reason: why.code,
                            cookies: setLogin)
                    case .success(let sessionCookies):
                        done(
                            .redirect(login.returnTo, cookies: sessionCookies + setLogin, detail: "login completed"),
                            timing)
                    }
                }
            }
        }
    }

    /// Validates the ID token and stores the new session; the Set-Cookie lines for it.
    func startSession(
        _ t: TokenResponse, login: PendingLogins.Login, client: ClientConfig, issuer: IssuerConfig, cookies: Cookies,
        done: @escaping (Result<[String], SessionFailure>) -> Void
    ) {
        guard let idToken = t.idToken else {
            done(.failure(.noIDToken))
            return
        }
        let verifier = issuer.idTokenVerifier(clientID: client.authentication.clientID)
        let keys = tokens.issuerKeys
        // A key the AS has just rotated in: one refetch, then once more (IssuerKeyResolver).
        keys.verify(
            { () -> Result<JSONObject, Error> in
                guard let set = keys[issuer: issuer.name] else {
                    return .failure(SessionFailure.keysNotLoaded(issuer: issuer.name))
                }
                return Result {
                    try verifier.verify(
                        idToken, keys: set, nonce: login.nonce, accessToken: t.accessToken, now: self.now)
                }
            },
            unknownKey: IssuerKeyResolver.missingKey(of: issuer.name),
            done: { [weak self] outcome in
                guard let self else { return }
                switch outcome {
                case .success(let claims):
                    // A step-up login: the ID token must say the authentication it was sent for
                    // (else the browser keeps the session it had, not a weaker new one).
                    if let why = login.authenticationFailure(claims, now: self.now, leeway: verifier.leeway) {
                        done(.failure(.authenticationInsufficient(why)))
                        return
                    }
                    self.startSession(
                        t, idToken: idToken, claims: claims, login: login, client: client, issuer: issuer,
                        cookies: cookies, done: done)
                case .failure(let failure as SessionFailure): done(.failure(failure))
                case .failure(let error): done(.failure(.idTokenRefused("\(error)")))
                }
            })
    }

    /// The rest of `startSession`, once the ID token's `claims` are verified.
    private func startSession(
        _ t: TokenResponse, idToken: String, claims: JSONObject, login: PendingLogins.Login, client: ClientConfig,
        issuer: IssuerConfig, cookies: Cookies, done: @escaping (Result<[String], SessionFailure>) -> Void
    ) {
        let now = self.now
        guard let subject = claims["sub"]?.string, !subject.isEmpty else {
            done(.failure(.invalidSubject))
            return
        }
        mergeUserinfo(claims, subject: subject, accessToken: t.accessToken, client: client, issuer: issuer) {
            [weak self] outcome in
            guard let self else { return }
            let merged: JSONObject
            switch outcome {
            case .claims(let c): merged = c
            case .subjectMismatch:
                done(.failure(.userinfoSubjectMismatch))
                return
            case .failed(.unreachable(let why)):
                done(.failure(.userinfoUnreachable(why)))
                return
            case .failed(.refused(let why)):
                done(.failure(.userinfoRefused(why)))
                return
            }
            self.resolveDistributedClaims(merged, accessToken: t.accessToken, client: client, issuer: issuer) {
                merged in
                let session = Session(
                    id: Session.newID(), client: login.client, subject: subject,
                    claims: self.sessionClaims(merged, t, client),
                    idToken: idToken, accessToken: self.keepAccessToken ? t.accessToken : nil,
                    refreshToken: t.refreshToken,
                    accessExpiresAt: Self.expiry(t.expiresIn, now: now), createdAt: now, lastSeenAt: now)
                self.save(session, cookies: cookies, creating: true) { result in
                    if case .success = result { self.endReplaced(cookies, by: session) }
                    done(result)
                }
            }
        }
    }

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
