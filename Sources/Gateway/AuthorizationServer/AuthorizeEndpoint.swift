import Foundation
import JOSE
import OAuth
import Reactor

/// The AS's authorization endpoint (RFC 6749 §4.1) and its consent form. In order:
/// - the client and its redirect URI (`AuthorizationRequest.target`), then the client's
///   metadata document, which must list that redirect URI: until then every error is a page,
///   never a redirect (RFC 6749 §4.1.2.1);
/// - the rest of the request (PKCE S256, `resource`, `scope`, …), whose errors go back to the
///   client with `state` and `iss` (RFC 9207);
/// - the user's session with the `login` client; none sends the browser through the existing
///   login, which comes back here;
/// - the scopes: those asked (all the user may have, when none are), each one the user's
///   claims meet the AS's rule for;
/// - consent, unless `consent: false` or the user granted these before;
/// - a code, single use and bound to the client, the redirect URI, the resource, the PKCE
///   challenge and any `dpop_jkt`.
struct AuthorizeEndpoint {
    /// Unowned: the services outlive every request.
    unowned(unsafe) let services: WorkerServices
    let server: AuthorizationServerWorker

    func authorize(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        // GET only: a HEAD must not issue a code.
        guard request.head.method == .GET else {
            return .answer(
                GatewayResponse(status: 405, headers: [("Allow", "GET")], body: "", contentType: "text/plain"))
        }
        guard let config = server.config, config.login != nil else {
            return .answer(
                ErrorResponse.make(404, error: "not_found", description: "no such endpoint", requestID: ctx.requestID))
        }
        guard let pairs = FormEncoding.decode(Substring(request.query ?? "")) else {
            return .answer(page("the request's query is not well-formed"))
        }
        let target: AuthorizationRequest.Target
        switch AuthorizationRequest.target(pairs) {
        case .failure(let e): return .answer(page(e.description))
        case .success(let t): target = t
        }
        server.client(target.clientID) { outcome in
            let document: ClientIDMetadataDocument
            switch outcome {
            case .refused(let why): return request.answer(page(why))
            case .document(let d): document = d
            }
            guard document.redirectURI(matching: target.redirectURI) != nil else {
                return request.answer(page("redirect_uri is not one the client's metadata document lists"))
            }
            let authorization: AuthorizationRequest
            do throws(TokenEndpointError) {
                guard document.grantTypes.contains("authorization_code") else {
                    throw TokenEndpointError(
                        "unauthorized_client", "the client's metadata document does not list authorization_code")
                }
                authorization = try AuthorizationRequest(target, resources: server.resources)
            } catch {
                return request.answer(
                    refusal(error, to: target.redirectURI, state: target.parameters["state"], config))
            }
            withSession(request, config) { session, setCookies in
                decide(request, authorization, document: document, session: session, setCookies: setCookies, config)
            }
        }
        return .suspend
    }

    /// The user's session with the `login` client; without one, the browser goes through the
    /// login and comes back to this same request.
    func withSession(
        _ request: RoutedRequest, _ config: AuthorizationServerConfig,
        then use: @escaping (Session, [String]) -> Void
    ) {
        guard let login = config.login, let route = LoginRouteConfig(clients: [login]) else { return }
        let issuer = services.config.clients[login]?.issuer ?? ""
        services.authentication.login.authenticate(route: route, cookies: Cookies(request.head.fields)) { decision in
            var decision = decision
            // A session the IdP revoked (Shared Signals) makes no grant: it counts as none, as
            // on the login routes (SessionStage).
            if case .allow(let session, _) = decision, services.revocations.standing,
                services.revocations.check(
                    RevocationSubject(session: session, issuer: issuer), now: services.wallClock.seconds)
                    != nil
            {
                decision = .none(clear: [])
            }
            switch decision {
            case .allow(let session, let setCookies): use(session, setCookies)
            case .unavailable(let reason, let detail):
                var r = LoginService.unavailable(detail, reason: reason.rawValue)
                r.reason = reason.rawValue
                request.answer(r)
            case .none(let clear):
                guard request.head.method == .GET else {
                    return request.answer(page("the sign-in has ended; start again from the application", status: 400))
                }
                let here = request.path + (request.query.map { "?" + $0 } ?? "")
                // `rd` is bounded (ReturnTo): a request too long to come back to is refused here,
                // not cut short.
                guard services.current.returnPolicy.check(here) == here else {
                    return request.answer(page("the authorization request is too long"))
                }
                request.answer(
                    .redirect(
                        services.authentication.login.startRetry(returnTo: here, client: login), cookies: clear,
                        detail: "authorization server: sign-in first"))
            }
        }
    }

    /// The scopes, then consent or a code.
    private func decide(
        _ request: RoutedRequest, _ authorization: AuthorizationRequest, document: ClientIDMetadataDocument,
        session: Session, setCookies: [String], _ config: AuthorizationServerConfig
    ) {
        let grant: GrantSubject
        switch grantSubject(authorization, session: session, config) {
        case .failure(let e):
            return request.answer(
                refusal(e, to: authorization.redirectURI, state: authorization.state, config, cookies: setCookies))
        case .success(let g): grant = g
        }
        // A registered client is vouched for by no one: the user is asked every time, whatever
        // `consent` says (the MCP spec's confused deputy).
        let registered = authorization.clientID.isRegistered
        guard config.consent || registered else {
            return issue(request, authorization, grant, setCookies: setCookies, config)
        }
        // A loopback or custom-scheme redirect URI can be any program's on the machine: a
        // consent given before is not taken as given again (RFC 8252 §8.6).
        let anyProgram =
            document.redirectURI(matching: authorization.redirectURI)?.isLoopback != false
            || !authorization.redirectURI.hasPrefix("https://")
        server.grants.consents(idp: grant.idpIssuer, subject: grant.subject) { result in
            if !anyProgram, !registered, case .success(let consents) = result,
                let entry = consents.entry(
                    client: grant.clientID, resource: grant.resource, now: services.wallClock.seconds,
                    ttl: config.consentTTL),
                Set(entry.scopes).isSuperset(of: grant.scopes)
            {
                var under = grant
                under.consentID = entry.id
                return issue(request, authorization, under, setCookies: setCookies, config)
            }
            // A store that cannot say is not a consent: the user is asked.
            let ticket = ConsentTicket(
                request: authorization, scopes: grant.scopes, sessionID: session.id,
                expiresAt: services.wallClock.seconds + ConsentTicket.lifetime)
            var r = ConsentPage.make(
                ticket: ticket.sealed(by: server.grants.sealer), request: authorization, clientName: document.name,
                scopes: grant.scopes, action: server.path(AuthorizationServerMetadata.Path.consent),
                anyProgram: anyProgram)
            r.headers += setCookies.map { ("Set-Cookie", $0) }
            request.answer(r)
        }
    }

    /// Who the grant is for, and the scopes: those asked, each one the user's claims meet the
    /// AS's rule for (with none asked, every such scope).
    func grantSubject(_ authorization: AuthorizationRequest, session: Session, _ config: AuthorizationServerConfig)
        -> Result<GrantSubject, TokenEndpointError>
    {
        let clientName = config.login ?? ""
        let issuerName = services.config.clients[clientName]?.issuer
        guard let issuerName, let idp = services.config.issuers[issuerName]?.issuer else {
            return .failure(TokenEndpointError("server_error", "the login client has no issuer"))
        }
        let known = Set(config.scopes.map(\.name))
        if let asked = authorization.scopes, let unknown = asked.first(where: { !known.contains($0) }) {
            return .failure(TokenEndpointError("invalid_scope", "\(unknown.prefix(64)) is not a scope of this server"))
        }
        let eligible = config.scopes.filter { $0.rule.check(session.claims, issuer: issuerName) == nil }.map(\.name)
        let granted = authorization.scopes.map { asked in eligible.filter(asked.contains) } ?? eligible
        guard !granted.isEmpty else {
            return .failure(TokenEndpointError("access_denied", "the user may not be granted the scopes asked for"))
        }
        // What the scope rules read (checked again at each refresh), what tokens carry, and the
        // IdP's session id (a revocation of that session ends the grant).
        var claims = JSONObject()
        for name in config.sessionClaims.union(["sid"]) where session.claims[name] != nil {
            claims[name] = session.claims[name]
        }
        return .success(
            GrantSubject(
                subject: session.subject, idpIssuer: idp, clientID: authorization.clientID.text,
                resource: authorization.resource, scopes: granted, claims: claims, authTime: session.createdAt))
    }

    /// A code for the grant, and the browser back to the client with it.
    func issue(
        _ request: RoutedRequest, _ authorization: AuthorizationRequest, _ grant: GrantSubject, setCookies: [String],
        _ config: AuthorizationServerConfig
    ) {
        let record = AuthorizationCodeRecord(
            grant: grant, redirectURI: authorization.redirectURI, codeChallenge: authorization.codeChallenge,
            issuedAt: services.wallClock.seconds, dpopJKT: authorization.dpopJKT)
        server.grants.issueCode(record) { result in
            switch result {
            case .failure(let e):
                services.log.warning(
                    "authorization server: the code could not be stored", metadata: ["error": .string(e.description)])
                request.answer(
                    refusal(
                        TokenEndpointError("temporarily_unavailable", "the server cannot issue codes right now"),
                        to: authorization.redirectURI, state: authorization.state, config, cookies: setCookies))
            case .success(let code):
                var params = [("code", code)]
                if let state = authorization.state { params.append(("state", state)) }
                params.append(("iss", config.issuer))
                var r = GatewayResponse.redirect(
                    AuthorizationRequest.response(to: authorization.redirectURI, params), cookies: setCookies,
                    detail: "authorization server: code issued (\(grant.clientID))")
                r.reason = nil
                request.answer(r)
            }
        }
    }

    /// An error the client is told at its redirect URI (RFC 6749 §4.1.2.1), with `iss`.
    func refusal(
        _ e: TokenEndpointError, to redirectURI: String, state: String?, _ config: AuthorizationServerConfig,
        cookies: [String] = []
    ) -> GatewayResponse {
        server.hub.refused(endpoint: "authorize", error: e.code)
        var params = [("error", e.code), ("error_description", e.description)]
        if let state, state.utf8.count <= AuthorizationRequest.maxState { params.append(("state", state)) }
        params.append(("iss", config.issuer))
        var r = GatewayResponse.redirect(
            AuthorizationRequest.response(to: redirectURI, params), cookies: cookies,
            detail: "authorization server: authorization refused: \(e.code): \(e.description)")
        r.reason = e.code
        return r
    }

    /// An error the browser is shown: the client or its redirect URI is in doubt.
    func page(_ why: String, status: Int = 400) -> GatewayResponse {
        server.hub.refused(endpoint: "authorize", error: "invalid_request")
        var r = GatewayResponse.page(
            status, title: "Authorization", message: "This authorization request cannot be completed: \(why).",
            detail: "authorization server: \(why)")
        r.problem = .init(error: "invalid_request", description: why)
        r.reason = "invalid_request"
        return r
    }
}
