import Foundation
import JOSE
import OAuth
import Reactor

/// The consent form's POST: the ticket the page carried (`ConsentTicket`, the CSRF token),
/// from the session it was shown to, and the user's answer. Allowed: the consent is
/// remembered for the user, client and resource, and the browser goes back with a code.
/// Denied: back with `access_denied` (RFC 6749 §4.1.2.1).
extension AuthorizeEndpoint {
    func consent(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        guard request.head.method == .POST else {
            return .answer(
                GatewayResponse(status: 405, headers: [("Allow", "POST")], body: "", contentType: "text/plain"))
        }
        guard let config = server.config, config.login != nil else {
            return .answer(
                ErrorResponse.make(404, error: "not_found", description: "no such endpoint", requestID: ctx.requestID))
        }
        // A browser says where a form was posted from: only this server's own page may post it.
        if let origin = request.head.fields.first("Origin"), origin != Self.origin(of: config.issuer) {
            return .answer(page("the form was not posted from this server's page", status: 403))
        }
        services.readOwnBody(request.exchange, ctx, limit: 16 * 1024) { body in
            guard let form = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))),
                let text = form.first(where: { $0.0 == "ticket" })?.1,
                let ticket = ConsentTicket.open(
                    text, with: server.grants.sealer, resources: server.resources, now: services.wallClock.seconds)
            else {
                return request.answer(page("the consent form has expired; start again from the application"))
            }
            let allowed = form.first(where: { $0.0 == "decision" })?.1 == "allow"
            withSession(request, config) { session, setCookies in
                guard ConstantTime.equals(Array(session.id.utf8), Array(ticket.sessionID.utf8)) else {
                    return request.answer(page("the consent form was shown to another session", status: 403))
                }
                // Once: a ticket posted again (a double click, a replay) gives no second code.
                services.authentication.replay.claim(
                    ReplayID(assertionOf: session.id, jti: ticket.id, kind: 6), kind: .consentTicket,
                    until: ticket.expiresAt + 60, now: services.wallClock.seconds
                ) { verdict in
                    switch verdict {
                    case .fresh: break
                    case .replayed:
                        return request.answer(
                            page("the consent form was posted before; start again from the application"))
                    case .unavailable, .refused:
                        return request.answer(LoginService.unavailable("consent: the replay store cannot answer"))
                    }
                    decided(request, ticket, allowed: allowed, session: session, setCookies: setCookies, config)
                }
            }
        }
        return .suspend
    }

    /// The user's answer, from the session the ticket was shown to.
    private func decided(
        _ request: RoutedRequest, _ ticket: ConsentTicket, allowed: Bool, session: Session, setCookies: [String],
        _ config: AuthorizationServerConfig
    ) {
        let authorization = ticket.request
        let back = { (e: TokenEndpointError) in
            request.answer(
                refusal(e, to: authorization.redirectURI, state: authorization.state, config, cookies: setCookies))
        }
        guard allowed else { return back(TokenEndpointError("access_denied", "the user denied the request")) }
        let grant: GrantSubject
        switch grantSubject(authorization, session: session, config) {
        case .failure(let e): return back(e)
        case .success(let g): grant = g
        }
        // What the page showed, no more: the claims may have changed since.
        var shown = grant
        shown.scopes = grant.scopes.filter(ticket.scopes.contains)
        guard !shown.scopes.isEmpty else {
            return back(TokenEndpointError("access_denied", "the user may no longer be granted these scopes"))
        }
        server.grants.changeConsent(
            idp: shown.idpIssuer, subject: shown.subject, client: shown.clientID, resource: shown.resource,
            scopes: shown.scopes, ttl: config.consentTTL, keep: config.refreshTokenTTL
        ) { given in
            // The grant stands on the consent it was made under; a consent the store could not
            // keep was still given for this code, which then stands on nothing later.
            guard case .success(let entry?) = given else {
                return issue(request, authorization, shown, setCookies: setCookies, config)
            }
            server.hub.consented(client: shown.clientID)
            var under = shown
            under.consentID = entry.id
            issue(request, authorization, under, setCookies: setCookies, config)
        }
    }

    /// `scheme://authority` of a URL, as a browser's `Origin` field writes it.
    static func origin(of url: String) -> String {
        guard let u = ConfigValues.url(url) else { return url }
        let host = u.host.contains(":") ? "[\(u.host)]" : u.host
        let standard: UInt16 = u.scheme == "https" ? 443 : 80
        return "\(u.scheme)://\(host)" + (u.port == standard ? "" : ":\(u.port)")
    }
}
