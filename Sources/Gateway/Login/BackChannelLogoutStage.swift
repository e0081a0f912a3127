import Foundation
import JOSE
import OAuth

/// The content of the back-channel logout endpoint's built-in route: POST only, its form read
/// whole.
final class BackChannelLogoutStage: Stage {
    func run(_ request: RoutedRequest) -> StageOutcome {
        guard request.head.method == .POST else {
            return request.answering(GatewayResponse(status: 405, body: "", contentType: "text/plain"))
        }
        let logout = BackChannelLogout(login: request.services.authentication.login)
        request.readOwnBody { body in logout.run(body: body) { request.answerOwn($0) } }
        return .suspend
    }
}

/// OpenID Connect Back-Channel Logout 1.0: the AS posts a logout token (§2.5) when a user's
/// session there ends; every session of that AS session (`sid`) or user (`sub`) ends here too
/// — on every replica, since the store is shared (Redis: the sessions are deleted; embedded:
/// the logout is remembered and checked on each request).
struct BackChannelLogout {
    let login: LoginService

    /// Why a back-channel logout request was refused (§2.8: 400 `invalid_request`): the
    /// access log's `reason`. Stable codes.
    enum LogoutTokenRefusal: String, CaseIterable, Sendable {
        /// Not exactly one `logout_token` parameter (§2.5).
        case noLogoutToken = "no_logout_token"
        /// Not a JWS with an `iss`.
        case malformed = "malformed_logout_token"
        /// No login client of this gateway for its `iss` and `aud`.
        case unknownClient = "unknown_client"
        /// The token failed §2.6 validation.
        case invalid = "invalid_logout_token"
        /// Its `jti` was used before (§2.6 step 10).
        case replayed = "logout_token_replayed"

        var code: String { rawValue }
    }

    func run(body: [UInt8], done: @escaping (GatewayResponse) -> Void) {
        let config = login.config
        // §2.8: 400 with an error for an invalid request; 200 (no body) when logged out.
        func refuse(_ kind: LogoutTokenRefusal, _ description: String, _ detail: String) {
            var r = GatewayResponse(
                status: 400, body: "{\"error\":\"invalid_request\",\"error_description\":\"\(description)\"}",
                contentType: "application/json", detail: "back-channel logout refused: \(detail)")
            r.reason = kind.code
            done(r)
        }
        guard body.count <= 64 << 10, let form = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))),
            form.filter({ $0.0 == "logout_token" }).count == 1,
            let token = form.first(where: { $0.0 == "logout_token" })?.1
        else {
            refuse(.noLogoutToken, "exactly one logout_token is required", "no logout_token")
            return
        }
        // Which client: the (unverified) iss and aud pick one; only its issuer's keys and
        // rules then decide.
        guard let jws = try? CompactJWS(token), let unverified = try? jws.claims(), let iss = unverified["iss"]?.string
        else {
            refuse(.malformed, "the logout token is malformed", "not a JWS with iss")
            return
        }
        let audiences = unverified["aud"]?.string.map { [$0] } ?? unverified["aud"]?.array?.compactMap(\.string) ?? []
        guard
            let client = config.clients.values.first(where: { c in
                c.issuer.flatMap { config.issuers[$0] }?.issuer == iss && audiences.contains(c.authentication.clientID)
                    && config.browserLoginClients.contains(c.name)
            }), let issuer = client.issuer.flatMap({ config.issuers[$0] }),
            login.tokens.issuerKeys[issuer: issuer.name] != nil
        else {
            refuse(
                .unknownClient, "the logout token is not for a client of this gateway", "no login client for iss \(iss)"
            )
            return
        }
        verifyLogoutToken(token, client: client, issuer: issuer, refuse: refuse, done: done)
    }

    private func verifyLogoutToken(
        _ token: String, client: ClientConfig, issuer: IssuerConfig,
        refuse: @escaping (LogoutTokenRefusal, String, String) -> Void,
        done: @escaping (GatewayResponse) -> Void
    ) {
        let verifier = issuer.logoutTokenVerifier(clientID: client.authentication.clientID)
        let keys = login.tokens.issuerKeys
        // A key the AS has just rotated in: one refetch, then once more (IssuerKeyResolver).
        keys.verify(
            { () -> Result<LogoutTokenVerifier.LogoutToken, Error> in
                Result {
                    try verifier.verify(token, keys: keys[issuer: issuer.name] ?? JWKSet(keys: []), now: login.now)
                }
            },
            unknownKey: IssuerKeyResolver.missingKey(of: issuer.name),
            done: { outcome in
                switch outcome {
                case .success(let logout):
                    endSessions(of: logout, client: client, issuer: issuer, refuse: refuse, done: done)
                case .failure(let error): refuse(.invalid, "the logout token is invalid", "\(error)")
                }
            })
    }

    /// OIDC Back-Channel Logout §2.6 steps 10 and on, for a verified `logout` token.
    private func endSessions(
        of logout: LogoutTokenVerifier.LogoutToken, client: ClientConfig, issuer: IssuerConfig,
        refuse: @escaping (LogoutTokenRefusal, String, String) -> Void, done: @escaping (GatewayResponse) -> Void
    ) {
        let now = login.now
        // Sessions begun before the logout token was issued end; later ones (a new login) stay —
        // so a replayed token can end nothing the first delivery did not.
        let expiresAt = now + Int64(login.config.session.absoluteTimeout)
        let jtiKey = ReplayID(logoutTokenOf: issuer.issuer, jti: logout.jti)
        if login.shared.logoutTokens.contains(jtiKey, now: now) {  // §2.6 step 10
            refuse(.replayed, "the logout token was used before", "jti replayed")
            return
        }
        login.store.endAll(client: client.name, sid: logout.sid, sub: logout.sub, at: logout.iat, expiresAt: expiresAt)
        {
            result in
            switch result {
            case .success(let n):
                // Its jti is spent only once the logout took effect (§2.6 step 10): an AS that
                // retries after a 503 is not refused as a replay.
                _ = login.shared.logoutTokens.claim(jtiKey, until: now + 600, now: now)
                done(
                    GatewayResponse(
                        status: 200, body: "", contentType: "text/plain",
                        detail:
                            "back-channel logout: sid \(logout.sid != nil), sub \(logout.sub != nil), \(n) sessions ended"
                    ))
            case .failure(let e):
                login.log.warning(
                    "back-channel logout: the session store failed", metadata: ["error": .string(e.description)])
                var r = GatewayResponse(
                    status: 503, body: "", contentType: "text/plain", detail: "back-channel logout: \(e)")
                r.reason = UnavailableReason.sessionStoreUnavailable.code
                r.headers.append(("Retry-After", "5"))
                done(r)
            }
        }
    }
}
