import Foundation
import JOSE
import OAuth

/// OpenID Connect Back-Channel Logout 1.0: the AS posts a logout token (§2.5) when a user's
/// session there ends; every session of that AS session (`sid`) or user (`sub`) ends here too
/// — on every replica, since the store is shared (Redis: the sessions are deleted; embedded:
/// the logout is remembered and checked on each request).
extension LoginService {
    func backchannelLogout(body: [UInt8], done: @escaping (GatewayResponse) -> Void) {
        // §2.8: 400 with an error for an invalid request; 200 (no body) when logged out.
        func refuse(_ description: String, _ detail: String) {
            done(GatewayResponse(status: 400, body: "{\"error\":\"invalid_request\",\"error_description\":\"\(description)\"}",
                                 contentType: "application/json", detail: "back-channel logout refused: \(detail)"))
        }
        guard body.count <= 64 << 10, let form = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))),
              form.filter({ $0.0 == "logout_token" }).count == 1, let token = form.first(where: { $0.0 == "logout_token" })?.1 else {
            refuse("exactly one logout_token is required", "no logout_token"); return
        }
        // Which client: the (unverified) iss and aud pick one; only its issuer's keys and
        // rules then decide.
        guard let jws = try? CompactJWS(token), let unverified = try? jws.claims(), let iss = unverified["iss"]?.string else {
            refuse("the logout token is malformed", "not a JWS with iss"); return
        }
        let audiences = unverified["aud"]?.string.map { [$0] } ?? unverified["aud"]?.array?.compactMap(\.string) ?? []
        guard let client = config.clients.values.first(where: { c in
            c.issuer.flatMap { config.issuers[$0] }?.issuer == iss && audiences.contains(c.authentication.clientID)
                && config.routes.contains { $0.client == c.name }
        }), let issuer = client.issuer.flatMap({ config.issuers[$0] }), let keys = tokens.keys[issuer.name] else {
            refuse("the logout token is not for a client of this gateway", "no login client for iss \(iss)"); return
        }
        let now = Self.now()
        let logout: LogoutTokenVerifier.LogoutToken
        do {
            logout = try LogoutTokenVerifier(issuer: issuer.issuer, clientID: client.authentication.clientID, algorithms: issuer.algorithms)
                .verify(token, keys: keys, now: now)
        } catch {
            refuse("the logout token is invalid", "\(error)"); return
        }
        // A logout token is good once (§2.6 step 10): its jti is remembered for its lifetime.
        guard shared.logoutTokens.claim(ReplayID(jkt: "logout\u{0}" + iss, jti: logout.jti), until: now + 600, now: now) == .fresh else {
            refuse("the logout token was used before", "jti replayed"); return
        }
        let expiresAt = now + Int64(config.session.absoluteTimeout)
        store.endAll(client: client.name, sid: logout.sid, sub: logout.sub, at: now, expiresAt: expiresAt) { [weak self] result in
            switch result {
            case .success(let n):
                done(GatewayResponse(status: 200, body: "", contentType: "text/plain",
                                     detail: "back-channel logout: sid \(logout.sid != nil), sub \(logout.sub != nil), \(n) sessions ended"))
            case .failure(let e):
                self?.log.warning("back-channel logout: the session store failed", metadata: ["error": .string(e.description)])
                var r = GatewayResponse(status: 503, body: "", contentType: "text/plain", detail: "back-channel logout: \(e)")
                r.headers.append(("Retry-After", "5"))
                done(r)
            }
        }
    }
}
