import Foundation
import JOSE
import OAuth

/// A verified authorization response's code, redeemed at the token endpoint (PKCE's
/// verifier, the client's authentication); then the ID token checked against this login's
/// nonce (OIDC Core §3.1.3.7) and a step-up's asked authentication, the claims sources asked,
/// and the new session stored.
extension LoginCallback {
    /// The code of a verified authorization response, redeemed at the token endpoint; then the
    /// session.
    func redeem(
        _ parsed: Result<AuthorizationResponse, ResponseRefusal>, pending: PendingLogins.Login,
        taken: PendingLoginTake, client: ClientConfig, issuer: IssuerConfig, meta: ProviderMetadata,
        origin: RequestOrigin.Origin?, cookies: Cookies, query: Substring,
        timing: Timing, done: @escaping (GatewayResponse, Timing) -> Void
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
            guard state == pending.state else {
                fail(
                    400, "The sign-in response was not valid.", "the response's state is not the login's",
                    reason: LoginFailure.malformedResponse.code, cookies: setLogin)
                return
            }
            code = c
        }
        guard let tokenEndpoint = meta.tokenEndpoint, let redirect = login.redirectURI(client, origin: origin) else {
            done(
                LoginService.unavailable(
                    "no token endpoint or redirect URI", reason: LoginFailure.noTokenEndpoint.code),
                timing)
            return
        }
        let grant = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect),
            ("code_verifier", pending.codeVerifier)
        ]
        let started = clock()
        login.server.token(tokenEndpoint, grant: grant, to: login.serverTarget(client, issuer)) { result in
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
                startSession(tokens, pending: pending, client: client, issuer: issuer, cookies: cookies) { outcome in
                    switch outcome {
                    case .failure(let why) where why.isUnavailable:
                        // The code is spent: trying again means a new login to the same place.
                        done(
                            LoginService.unavailable(
                                why.description, reason: why.code,
                                retry: login.startRetry(returnTo: pending.returnTo, client: pending.client)), timing)
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
                            .redirect(pending.returnTo, cookies: sessionCookies + setLogin, detail: "login completed"),
                            timing)
                    }
                }
            }
        }
    }

    /// Validates the ID token and stores the new session; the Set-Cookie lines for it.
    private func startSession(
        _ t: TokenResponse, pending: PendingLogins.Login, client: ClientConfig, issuer: IssuerConfig,
        cookies: Cookies, done: @escaping (Result<[String], SessionFailure>) -> Void
    ) {
        guard let idToken = t.idToken else {
            done(.failure(.noIDToken))
            return
        }
        let verifier = issuer.idTokenVerifier(clientID: client.authentication.clientID)
        let keys = login.tokens.issuerKeys
        // A key the AS has just rotated in: one refetch, then once more (IssuerKeyResolver).
        keys.verify(
            { () -> Result<JSONObject, Error> in
                guard let set = keys[issuer: issuer.name] else {
                    return .failure(SessionFailure.keysNotLoaded(issuer: issuer.name))
                }
                return Result {
                    try verifier.verify(
                        idToken, keys: set, nonce: pending.nonce, accessToken: t.accessToken, now: login.now)
                }
            },
            unknownKey: IssuerKeyResolver.missingKey(of: issuer.name),
            done: { outcome in
                switch outcome {
                case .success(let claims):
                    // A step-up login: the ID token must say the authentication it was sent for
                    // (else the browser keeps the session it had, not a weaker new one).
                    if let why = pending.authenticationFailure(claims, now: login.now, leeway: verifier.leeway) {
                        done(.failure(.authenticationInsufficient(why)))
                        return
                    }
                    startSession(
                        t, idToken: idToken, claims: claims, pending: pending, client: client, issuer: issuer,
                        cookies: cookies, done: done)
                case .failure(let failure as SessionFailure): done(.failure(failure))
                case .failure(let error): done(.failure(.idTokenRefused("\(error)")))
                }
            })
    }

    /// The rest of `startSession`, once the ID token's `claims` are verified.
    private func startSession(
        _ t: TokenResponse, idToken: String, claims: JSONObject, pending: PendingLogins.Login,
        client: ClientConfig, issuer: IssuerConfig, cookies: Cookies,
        done: @escaping (Result<[String], SessionFailure>) -> Void
    ) {
        let now = login.now
        guard let subject = claims["sub"]?.string, !subject.isEmpty else {
            done(.failure(.invalidSubject))
            return
        }
        login.claimsSources.mergeUserinfo(
            claims, subject: subject, accessToken: t.accessToken, for: login.claimsClient(client, issuer)
        ) { outcome in
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
            // Made again: the config in force may have changed while userinfo answered.
            login.claimsSources.resolveDistributedClaims(
                merged, accessToken: t.accessToken, for: login.claimsClient(client, issuer)
            ) { merged in
                let session = Session(
                    id: Session.newID(), client: pending.client, subject: subject,
                    claims: login.sessionClaims(merged, t, client),
                    idToken: idToken, accessToken: login.keepAccessToken ? t.accessToken : nil,
                    refreshToken: t.refreshToken,
                    accessExpiresAt: LoginService.expiry(t.expiresIn, now: now), createdAt: now, lastSeenAt: now)
                login.save(session, cookies: cookies, creating: true) { result in
                    if case .success = result { login.endReplaced(cookies, by: session) }
                    done(result)
                }
            }
        }
    }
}
