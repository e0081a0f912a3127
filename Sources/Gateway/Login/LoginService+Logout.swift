import Foundation
import JOSE
import OAuth

/// `/oauth2/logout`: ends the session (POST with the form's CSRF token, or GET with a valid
/// `token`; a bare GET shows the confirmation form), revokes the refresh token if asked
/// (RFC 7009), clears the cookies, then RP-initiated logout at the AS's end_session_endpoint
/// with id_token_hint and post_logout_redirect_uri (OIDC RP-Initiated Logout 1.0 §2).
extension LoginService {
    func logout(
        method: String, query: Substring, form: [(String, String)], cookies: Cookies,
        done: @escaping (GatewayResponse) -> Void
    ) {
        let clearAll = cookies.clear(settings.sessionCookie, secure: settings.secure, domain: settings.cookieDomain)
        let after = config.login.afterLogout
        guard let value = cookies.value(settings.sessionCookie) else {
            done(
                .redirect(
                    after, cookies: cookies.values[settings.sessionCookie] == nil ? [] : clearAll,
                    detail: "logout without a session"))
            return
        }
        store.load(value) { [weak self] lookup in
            guard let self else { return }
            guard case .found(let session) = lookup else {
                if case .unavailable(let why) = lookup {
                    done(
                        Self.unavailable(
                            "session store: \(why)", reason: UnavailableReason.sessionStoreUnavailable.code))
                    return
                }
                done(.redirect(after, cookies: clearAll, detail: "logout of an unknown session"))
                return
            }
            let given = (method == "POST" ? form : FormEncoding.decode(query) ?? []).first { $0.0 == "token" }?.1
            guard let token = given, self.settings.csrfTokenIsValid(token, for: session) else {
                // No valid token: ask, with a same-origin form that carries one.
                done(
                    GatewayResponse(
                        status: method == "POST" ? 403 : 200,
                        body: LoginPages.logoutConfirmation(
                            action: self.config.login.logoutPath, token: self.settings.csrfToken(session)),
                        detail: method == "POST" ? "logout refused: no valid CSRF token" : "logout confirmation",
                        page: .logoutConfirmation(
                            action: self.config.login.logoutPath, token: self.settings.csrfToken(session))))
                return
            }
            let expiresAt = session.createdAt + Int64(self.config.session.absoluteTimeout)
            self.store.end(session, expiresAt: expiresAt) { result in
                if case .failure(let e) = result {
                    done(
                        Self.unavailable("session store: \(e)", reason: UnavailableReason.sessionStoreUnavailable.code))
                    return
                }
                self.finishLogout(session, clear: clearAll, done: done)
            }
        }
    }

    private func finishLogout(_ session: Session, clear: [String], done: @escaping (GatewayResponse) -> Void) {
        guard let (client, issuer, meta) = target(session.client) else {
            done(.redirect(config.login.afterLogout, cookies: clear, detail: "logged out (no AS metadata)"))
            return
        }
        if client.login.revokeOnLogout, let endpoint = meta.revocationEndpoint, let rt = session.refreshToken {
            server.revoke(endpoint, token: rt, hint: "refresh_token", to: serverTarget(client, issuer)) {
                [log] status in
                if status != 200 {
                    log.warning("refresh token revocation failed", metadata: ["status": .stringConvertible(status)])
                }
            }
        }
        guard let endSession = meta.endSessionEndpoint else {
            done(.redirect(config.login.afterLogout, cookies: clear, detail: "logged out"))
            return
        }
        var params: [(String, String)] = [("client_id", client.authentication.clientID)]
        if let hint = session.idToken { params.append(("id_token_hint", hint)) }
        if let back = client.login.postLogoutRedirectURI {
            params.append(("post_logout_redirect_uri", back))
            params.append(("state", Base64URL.encode(SecureRandom.bytes(16))))
        }
        done(
            .redirect(Self.url(endSession, params), cookies: clear, detail: "logged out; RP-initiated logout at the AS")
        )
    }

    /// `/.well-known/jwks.json`: the public keys of the clients (for an AS that reads the
    /// client's jwks_uri to check its request objects and assertions).
    func jwks() -> GatewayResponse {
        // The clients' keys, then the identity assertion keys (all of them: a key listed
        // second is published before it signs, so upstreams have it when it starts to).
        let clients = config.clients.values.sorted { $0.name < $1.name }
        let keys = clients.compactMap(\.key) + config.assertionKeys.map(\.key)
        // The keys the gateway signs upstream requests with (`upstreams.NAME.sign`).
        let signing =
            (config.upstreams.values.sorted { $0.name < $1.name }.compactMap(\.sign) + config.responseSigningKeys)
            .map(\.publicJWK)
        // Self-signed client certificates as JWKs with x5c (RFC 8705 §2.2), for the AS to match.
        let certificates = clients.compactMap(\.tls?.publishedJWK)
        let all =
            keys.map { JSONValue.object($0.publicJWK()) } + signing.map { .object($0) }
            + certificates.map { .object($0) }
        return GatewayResponse(
            status: 200, body: JSONSerializer.serialize(.object(JSONObject(["keys": .array(all)]))),
            contentType: "application/jwk-set+json")
    }

    /// A hosted request object (request_mode: request_uri), served once.
    func requestObject(id: Substring, done: @escaping (GatewayResponse) -> Void) {
        requestObjects.take(String(id)) { jwt in
            guard let jwt else {
                done(
                    GatewayResponse(
                        status: 404, body: "", contentType: "text/plain",
                        detail: "request object not found or already used"))
                return
            }
            done(
                GatewayResponse(
                    status: 200, body: jwt, contentType: "application/oauth-authz-req+jwt",
                    detail: "request object served"))
        }
    }
}
