import JOSE
import OAuth

/// Beginning a login: PKCE S256 (RFC 7636), fresh `state` and `nonce`, the pending login in
/// the browser's login-state cookie, then the browser sent to the authorization endpoint —
/// with a request object pushed by PAR (RFC 9126), passed by value or hosted here (RFC 9101),
/// or as plain parameters. A step-up login (RFC 9470 §4) also asks `acr_values` and
/// `max_age`, wherever the other parameters go, and its pending login remembers them for the
/// callback's check.
extension LoginService {
    /// `stepUp`: the route's `acr` and `max_age` the session did not meet (nil: a first login).
    func beginLogin(
        client name: String, returnTo: String, loginHint: String?, origin: RequestOrigin.Origin?, cookies: Cookies,
        stepUp: AuthorizationRequirement? = nil, done: @escaping (GatewayResponse) -> Void
    ) {
        // Nothing was sent to the AS yet: trying again is this same start.
        let retry = startRetry(returnTo: returnTo, client: name, stepUp: stepUp)
        func unavailable(_ detail: String, reason: String) -> GatewayResponse {
            Self.unavailable(detail, reason: reason, retry: retry)
        }
        guard let (client, issuer, meta) = target(name) else {
            done(
                unavailable(
                    "login client \(name): authorization server metadata not loaded",
                    reason: LoginFailure.metadataNotLoaded.code))
            return
        }
        guard let authorize = meta.authorizationEndpoint, let redirect = redirectURI(client, origin: origin) else {
            done(
                unavailable(
                    "login client \(name): no authorization endpoint or redirect URI",
                    reason: LoginFailure.noAuthorizationEndpoint.code))
            return
        }
        // FAPI 2.0 Security Profile §5.3.3.1 item 1: with the certificate as the sender
        // constraint, the AS must say it binds tokens to it (RFC 8705 §3.3).
        if client.profile == .fapi2, !client.login.dpop, client.tls != nil, !meta.tlsClientCertificateBoundAccessTokens
        {
            done(
                unavailable(
                    "login client \(name): the AS's metadata does not say tls_client_certificate_bound_access_tokens",
                    reason: LoginFailure.tokensNotBound.code))
            return
        }
        let now = self.now
        let verifier = PKCE.makeVerifier()
        guard let challenge = PKCE.challenge(for: verifier) else {
            done(unavailable("PKCE", reason: LoginFailure.pkceFailed.code))
            return
        }
        var extra = client.login.extra
        if client.login.responseMode.isJWT { extra.append(("response_mode", client.login.responseMode.rawValue)) }
        if client.login.loginHintFromQuery, let hint = loginHint, !hint.isEmpty, hint.utf8.count <= 256 {
            extra.append(("login_hint", hint))
        }
        var params = AuthorizationParameters(
            clientID: client.authentication.clientID, redirectURI: redirect, scope: client.login.scopes,
            state: PendingLogins.random(), nonce: PendingLogins.random(), codeChallenge: challenge, extra: extra)
        if let stepUp { params.askAuthentication(acrValues: stepUp.acr, maxAge: stepUp.maxAge) }
        let clientID = params.clientID

        // RFC 9126 §5: an AS that requires PAR gets PAR whatever the client's mode says.
        var mode = client.login.requestMode
        if meta.requirePushedAuthorizationRequests { mode = .par }
        var requestObject: String?
        if mode != .plain, let key = client.key {
            do {
                requestObject = try RequestObject.sign(
                    params, audience: issuer.issuer, key: key, alg: client.requestObjectAlgorithm ?? .RS256, now: now)
            } catch {
                done(unavailable("request object: \(error)", reason: LoginFailure.requestObjectFailed.code))
                return
            }
        }
        // OIDC Core §6.1: response_type, client_id and scope also go as plain parameters.
        let base: [(String, String)] = [
            ("client_id", clientID), ("response_type", "code"), ("scope", params.scope.joined(separator: " "))
        ]
        // Where the browser goes once its pending login is kept.
        func sendToAuthorizationEndpoint(_ setCookies: [String]) {
            switch mode {
            case .par:
                guard let endpoint = meta.pushedAuthorizationRequestEndpoint else {
                    done(
                        unavailable(
                            "login client \(name): request_mode par, but the AS has no PAR endpoint",
                            reason: LoginFailure.noPAREndpoint.code))
                    return
                }
                let pushed: [(String, String)] =
                    requestObject.map { [("client_id", clientID), ("request", $0)] } ?? params.pairs
                server.pushAuthorizationRequest(endpoint, parameters: pushed, to: serverTarget(client, issuer)) {
                    [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .success(let par):
                        done(
                            .redirect(
                                Self.url(authorize, [("client_id", clientID), ("request_uri", par.requestURI)]),
                                cookies: setCookies,
                                detail: "login started (par)"))
                    case .failure(let e):
                        self.log.warning(
                            "pushed authorization request failed",
                            metadata: ["client": .string(name), "error": .string("\(e)")])
                        done(unavailable("PAR: \(e)", reason: LoginFailure.parFailed.code))
                    }
                }
            case .request:
                guard let jwt = requestObject else {
                    done(
                        unavailable(
                            "request_mode request without a key", reason: LoginFailure.noRequestObjectKey.code))
                    return
                }
                done(
                    .redirect(
                        Self.url(authorize, base + [("request", jwt)]), cookies: setCookies,
                        detail: "login started (request)"))
            case .request_uri:
                guard let jwt = requestObject,
                    let origin = origin
                        ?? config.publicURLs.first.map({ .init(scheme: $0.scheme, authority: $0.authority) })
                else {
                    done(
                        unavailable(
                            "request_uri: no key or no public origin", reason: LoginFailure.requestURIUnavailable.code))
                    return
                }
                requestObjects.host(jwt) { [weak self] id in
                    guard let self, let id else {
                        done(
                            unavailable(
                                "request_uri: could not host the request object",
                                reason: LoginFailure.requestURIUnavailable.code))
                        return
                    }
                    let uri = "\(origin.scheme)://\(origin.authority)\(self.config.login.requestObjectPath)\(id)"
                    done(
                        .redirect(
                            Self.url(authorize, base + [("request_uri", uri)]), cookies: setCookies,
                            detail: "login started (request_uri)"))
                }
            case .plain:
                done(.redirect(Self.url(authorize, params.pairs), cookies: setCookies, detail: "login started (plain)"))
            }
        }
        let login = PendingLogins.Login(
            state: params.state, nonce: params.nonce, codeVerifier: verifier, returnTo: returnTo, client: name,
            createdAt: now, acrValues: params.acrValues, maxAge: params.maxAge)
        // The pending login is kept before the browser leaves: a callback must find it.
        pendingLogins.add(login, cookies: cookies, now: now) { result in
            switch result {
            case .failure(let e):
                done(unavailable("login state: \(e)", reason: LoginFailure.loginStateUnavailable.code))
            case .success(let setCookies): sendToAuthorizationEndpoint(setCookies)
            }
        }
    }

    /// `endpoint` with `params` added to its query.
    static func url(_ endpoint: String, _ params: [(String, String)]) -> String {
        endpoint + (endpoint.contains("?") ? "&" : "?") + FormEncoding.body(params)
    }
}
