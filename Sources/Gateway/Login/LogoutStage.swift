import Foundation
import JOSE
import OAuth

/// The content of the logout endpoint's built-in route: GET shows the confirmation (or logs
/// out with a valid `token`), POST takes the form.
final class LogoutStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        let method = request.head.method ?? .GET
        guard method == .GET || method == .POST else {
            return request.answering(.page(405, title: "Log out", message: "Method not allowed."))
        }
        let logout = RPInitiatedLogout(login: request.services.authentication.login)
        let query = Substring(request.query ?? "")
        let cookies = Cookies(request.head.fields)
        guard method == .POST else {
            logout.run(method: method.rawValue, query: query, form: [], cookies: cookies) { request.answerOwn($0) }
            return .suspend
        }
        request.readOwnBody { body in
            let form = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))) ?? []
            logout.run(method: method.rawValue, query: query, form: form, cookies: cookies) { request.answerOwn($0) }
        }
        return .suspend
    }
}

/// `/oauth2/logout`: ends the session (POST with the form's CSRF token, or GET with a valid
/// `token`; a bare GET shows the confirmation form), revokes the refresh token if asked
/// (RFC 7009), clears the cookies, then RP-initiated logout at the AS's end_session_endpoint
/// with id_token_hint and post_logout_redirect_uri (OIDC RP-Initiated Logout 1.0 §2).
struct RPInitiatedLogout {
    let login: LoginService

    func run(
        method: String, query: Substring, form: [(String, String)], cookies: Cookies,
        done: @escaping (GatewayResponse) -> Void
    ) {
        let settings = login.settings
        let clearAll = cookies.clear(settings.sessionCookie, secure: settings.secure, domain: settings.cookieDomain)
        let after = login.config.login.afterLogout
        guard let value = cookies.value(settings.sessionCookie) else {
            done(
                .redirect(
                    after, cookies: cookies.values[settings.sessionCookie] == nil ? [] : clearAll,
                    detail: "logout without a session"))
            return
        }
        login.store.load(value) { lookup in
            guard case .found(let session) = lookup else {
                if case .unavailable(let why) = lookup {
                    done(
                        LoginService.unavailable(
                            "session store: \(why)", reason: UnavailableReason.sessionStoreUnavailable.code))
                    return
                }
                done(.redirect(after, cookies: clearAll, detail: "logout of an unknown session"))
                return
            }
            let given = (method == "POST" ? form : FormEncoding.decode(query) ?? []).first { $0.0 == "token" }?.1
            guard let token = given, login.settings.csrfTokenIsValid(token, for: session) else {
                // No valid token: ask, with a same-origin form that carries one.
                done(
                    GatewayResponse(
                        status: method == "POST" ? 403 : 200,
                        body: LoginPages.logoutConfirmation(
                            action: login.config.login.logoutPath, token: login.settings.csrfToken(session)),
                        detail: method == "POST" ? "logout refused: no valid CSRF token" : "logout confirmation",
                        page: .logoutConfirmation(
                            action: login.config.login.logoutPath, token: login.settings.csrfToken(session))))
                return
            }
            let expiresAt = session.createdAt + Int64(login.config.session.absoluteTimeout)
            login.store.end(session, expiresAt: expiresAt) { result in
                if case .failure(let e) = result {
                    done(
                        LoginService.unavailable(
                            "session store: \(e)", reason: UnavailableReason.sessionStoreUnavailable.code))
                    return
                }
                finish(session, clear: clearAll, done: done)
            }
        }
    }

    private func finish(_ session: Session, clear: [String], done: @escaping (GatewayResponse) -> Void) {
        guard let (client, issuer, meta) = login.target(session.client) else {
            done(.redirect(login.config.login.afterLogout, cookies: clear, detail: "logged out (no AS metadata)"))
            return
        }
        if client.login.revokeOnLogout, let endpoint = meta.revocationEndpoint, let rt = session.refreshToken {
            login.server.revoke(endpoint, token: rt, hint: "refresh_token", to: login.serverTarget(client, issuer)) {
                [log = login.log] status in
                if status != 200 {
                    log.warning("refresh token revocation failed", metadata: ["status": .stringConvertible(status)])
                }
            }
        }
        guard let endSession = meta.endSessionEndpoint else {
            done(.redirect(login.config.login.afterLogout, cookies: clear, detail: "logged out"))
            return
        }
        var params: [(String, String)] = [("client_id", client.authentication.clientID)]
        if let hint = session.idToken { params.append(("id_token_hint", hint)) }
        if let back = client.login.postLogoutRedirectURI {
            params.append(("post_logout_redirect_uri", back))
            params.append(("state", Base64URL.encode(SecureRandom.bytes(16))))
        }
        done(
            .redirect(
                LoginService.url(endSession, params), cookies: clear,
                detail: "logged out; RP-initiated logout at the AS")
        )
    }
}
