import JOSE
import OAuth

/// The content of `/oauth2/start`'s built-in route: which client (`?client=`, the only one,
/// or the choice page), where to come back to (`rd`), and a step-up's asked authentication,
/// read from the query; then the login begins.
final class LoginStartStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        let services = request.services
        let ctx = request.context
        let login = services.authentication.login
        let params = request.query.flatMap { FormEncoding.decode(Substring($0)) } ?? []
        let rd = params.first { $0.0 == "rd" }?.1
        let client: String
        switch login.chooseClient(named: params.first { $0.0 == "client" }?.1) {
        case .client(let name): client = name
        case .refused(let response): return request.answering(response)
        case .choose(let names):
            return request.answering(
                services.chooseClientPage(
                    names, returnTo: rd.flatMap(services.current.returnPolicy.check) ?? "/",
                    requestID: ctx.requestID))
        }
        let origin = services.origin(ctx.forwarded)
        // An absolute `rd` on this request's own origin (a decision's login URL names the
        // original URL) is a same-origin path; other hosts need allowed_redirect_hosts.
        let returnTo = DecisionLogin.returnTarget(rd, origin: origin, policy: services.current.returnPolicy)
        let stepUp: AuthorizationRequirement?
        switch StepUpLogin.parse(params) {
        case .none: stepUp = nil
        case .stepUp(let asked): stepUp = asked
        case .invalid(let why):
            var r = GatewayResponse.page(
                400, title: "Sign-in", message: "The sign-in link is not valid.", detail: "start: \(why)")
            r.problem = .init(error: "invalid_request", description: why)
            return request.answering(r)
        }
        LoginStart(login: login).begin(
            client: client, returnTo: returnTo, loginHint: params.first { $0.0 == "login_hint" }?.1, origin: origin,
            cookies: Cookies(request.head.fields), stepUp: stepUp, done: { request.answerOwn($0) })
        return .suspend
    }
}

/// Beginning a login: PKCE S256 (RFC 7636), fresh `state` and `nonce`, the pending login in
/// the browser's login-state cookie, then the browser sent to the authorization endpoint —
/// with a request object pushed by PAR (RFC 9126), passed by value or hosted here (RFC 9101),
/// or as plain parameters. A step-up login (RFC 9470 §4) also asks `acr_values` and
/// `max_age`, wherever the other parameters go, and its pending login remembers them for the
/// callback's check.
struct LoginStart {
    let login: LoginService

    /// `stepUp`: the route's `acr` and `max_age` the session did not meet (nil: a first login).
    func begin(
        client name: String, returnTo: String, loginHint: String?, origin: RequestOrigin.Origin?, cookies: Cookies,
        stepUp: AuthorizationRequirement? = nil, done: @escaping (GatewayResponse) -> Void
    ) {
        // Nothing was sent to the AS yet: trying again is this same start.
        let retry = login.startRetry(returnTo: returnTo, client: name, stepUp: stepUp)
        func unavailable(_ detail: String, reason: String) -> GatewayResponse {
            LoginService.unavailable(detail, reason: reason, retry: retry)
        }
        guard let (client, issuer, meta) = login.target(name) else {
            done(
                unavailable(
                    "login client \(name): authorization server metadata not loaded",
                    reason: LoginFailure.metadataNotLoaded.code))
            return
        }
        guard let authorize = meta.authorizationEndpoint, let redirect = login.redirectURI(client, origin: origin)
        else {
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
        let now = login.now
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
                login.server.pushAuthorizationRequest(
                    endpoint, parameters: pushed, to: login.serverTarget(client, issuer)
                ) {
                    result in
                    switch result {
                    case .success(let par):
                        done(
                            .redirect(
                                LoginService.url(authorize, [("client_id", clientID), ("request_uri", par.requestURI)]),
                                cookies: setCookies,
                                detail: "login started (par)"))
                    case .failure(let e):
                        login.log.warning(
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
                        LoginService.url(authorize, base + [("request", jwt)]), cookies: setCookies,
                        detail: "login started (request)"))
            case .request_uri:
                guard let jwt = requestObject,
                    let origin = origin
                        ?? login.config.publicURLs.first.map({ .init(scheme: $0.scheme, authority: $0.authority) })
                else {
                    done(
                        unavailable(
                            "request_uri: no key or no public origin", reason: LoginFailure.requestURIUnavailable.code))
                    return
                }
                login.requestObjects.host(jwt) { id in
                    guard let id else {
                        done(
                            unavailable(
                                "request_uri: could not host the request object",
                                reason: LoginFailure.requestURIUnavailable.code))
                        return
                    }
                    let uri = "\(origin.scheme)://\(origin.authority)\(login.config.login.requestObjectPath)\(id)"
                    done(
                        .redirect(
                            LoginService.url(authorize, base + [("request_uri", uri)]), cookies: setCookies,
                            detail: "login started (request_uri)"))
                }
            case .plain:
                done(
                    .redirect(
                        LoginService.url(authorize, params.pairs), cookies: setCookies, detail: "login started (plain)")
                )
            }
        }
        let pending = PendingLogins.Login(
            state: params.state, nonce: params.nonce, codeVerifier: verifier, returnTo: returnTo, client: name,
            createdAt: now, acrValues: params.acrValues, maxAge: params.maxAge)
        // The pending login is kept before the browser leaves: a callback must find it.
        login.pendingLogins.add(pending, cookies: cookies, now: now) { result in
            switch result {
            case .failure(let e):
                done(unavailable("login state: \(e)", reason: LoginFailure.loginStateUnavailable.code))
            case .success(let setCookies): sendToAuthorizationEndpoint(setCookies)
            }
        }
    }
}
