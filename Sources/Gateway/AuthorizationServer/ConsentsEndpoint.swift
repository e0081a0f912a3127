import Foundation
import JOSE
import OAuth
import Reactor

/// A user's own page of the consents they gave (`/oauth2/as/consents`): each client and
/// resource, the scopes, and when; Revoke ends the consent, and with it every grant made under
/// it at that grant's next use (a refresh, a code's redemption), so the client must ask again;
/// the access tokens already given expire within `access_token_ttl`. The
/// forms carry a ticket sealed by the gateway for the session, client and resource, as the
/// consent page's do; a POST from another site's page is refused.
extension AuthorizeEndpoint {
    static let revokePurpose = "as-consent-revoke"

    func consents(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        guard let config = server.config, config.login != nil else {
            return .answer(
                ErrorResponse.make(404, error: "not_found", description: "no such endpoint", requestID: ctx.requestID))
        }
        switch request.head.method {
        case .GET:
            withSession(request, config) { session, setCookies in list(request, session, setCookies, config) }
        case .POST:
            if let origin = request.head.fields.first("Origin"), origin != Self.origin(of: config.issuer) {
                return .answer(page("the form was not posted from this server's page", status: 403))
            }
            services.readOwnBody(request.exchange, ctx, limit: 16 * 1024) { body in
                let form = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))) ?? []
                guard let text = form.first(where: { $0.0 == "ticket" })?.1,
                    let plain = server.grants.sealer.open(text, purpose: Self.revokePurpose),
                    let o = (try? JSONParser.parse(plain))?.object, let sid = o["i"]?.string,
                    let client = o["c"]?.string, let resource = o["r"]?.string, let until = o["e"]?.int64,
                    services.wallClock.seconds < until
                else { return request.answer(page("the form has expired; open the page again")) }
                withSession(request, config) { session, setCookies in
                    guard ConstantTime.equals(Array(session.id.utf8), Array(sid.utf8)) else {
                        return request.answer(page("the form was shown to another session", status: 403))
                    }
                    revoke(request, session, client: client, resource: resource, setCookies, config)
                }
            }
        default:
            return .answer(
                GatewayResponse(status: 405, headers: [("Allow", "GET, POST")], body: "", contentType: "text/plain"))
        }
        return .suspend
    }

    private func list(
        _ request: RoutedRequest, _ session: Session, _ setCookies: [String], _ config: AuthorizationServerConfig
    ) {
        guard let idp = loginIssuerURL(config) else { return request.answer(page("no login is configured")) }
        server.grants.consents(idp: idp, subject: session.subject) { result in
            guard case .success(let consents) = result else {
                return request.answer(LoginService.unavailable("consents: the store cannot be read"))
            }
            let e = LoginPages.escape
            let action = server.path(AuthorizationServerMetadata.Path.consents)
            var rows = ""
            for entry in consents.entries {
                let ticket = JSONObject([
                    "i": .string(session.id), "c": .string(entry.clientID), "r": .string(entry.resource),
                    "e": .number(String(services.wallClock.seconds + ConsentTicket.lifetime))
                ])
                let sealed = server.grants.sealer.seal(
                    Array(JSONSerializer.serialize(.object(ticket)).utf8), purpose: Self.revokePurpose)
                rows += "<tr><td><code>\(e(entry.clientID))</code></td><td><code>\(e(entry.resource))</code></td>"
                rows += "<td>\(e(entry.scopes.joined(separator: " ")))</td>"
                rows += "<td><form method=\"post\" action=\"\(e(action))\">"
                rows += "<input type=\"hidden\" name=\"ticket\" value=\"\(e(sealed))\">"
                rows += "<button type=\"submit\" class=\"revoke\">Revoke</button></form></td></tr>"
            }
            let table =
                consents.entries.isEmpty
                ? "<p id=\"none\">You have given no application access.</p>"
                : "<table id=\"consents\"><tr><th>Application</th><th>Resource</th><th>Access</th><th></th></tr>"
                    + rows + "</table>"
            var r = GatewayResponse(
                status: 200,
                body: LoginPages.page(
                    title: "Applications with access", message: "The applications you allowed to act for you.",
                    link: nil, form: table))
            r.referrerPolicy = "same-origin"
            r.headers += setCookies.map { ("Set-Cookie", $0) }
            r.detail = "authorization server: consents listed"
            request.answer(r)
        }
    }

    private func revoke(
        _ request: RoutedRequest, _ session: Session, client: String, resource: String, _ setCookies: [String],
        _ config: AuthorizationServerConfig
    ) {
        guard let idp = loginIssuerURL(config) else { return request.answer(page("no login is configured")) }
        server.grants.changeConsent(
            idp: idp, subject: session.subject, client: client, resource: resource, scopes: nil,
            ttl: config.consentTTL, keep: config.refreshTokenTTL
        ) { result in
            guard case .success(let old) = result else {
                return request.answer(LoginService.unavailable("consents: the store cannot be written"))
            }
            if old != nil { server.hub.revokedConsent(client: client) }
            // Its grants end at their next use: each finds its consent gone (TokenEndpoint).
            request.answer(
                .redirect(
                    server.path(AuthorizationServerMetadata.Path.consents), cookies: setCookies,
                    detail: "authorization server: consent revoked (\(client))"))
        }
    }

    /// The `login` client's IdP's issuer URL: what consents are kept under.
    func loginIssuerURL(_ config: AuthorizationServerConfig) -> String? {
        config.login.flatMap { services.config.clients[$0]?.issuer }.flatMap { services.config.issuers[$0]?.issuer }
    }
}
