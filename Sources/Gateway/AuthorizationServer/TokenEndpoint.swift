import Foundation
import JOSE
import OAuth
import Reactor

/// The AS's token endpoint (RFC 6749 §3.2), with the jwt-bearer grant (RFC 7523 §2.1) for
/// Identity Assertion JWT Authorization Grants: Enterprise-Managed Authorization, where the
/// user's IdP, not a consent screen, says this client may act for them at this resource.
///
/// In order: a form POST (each parameter at most once, RFC 6749 §3.2); the client
/// authenticates with `private_key_jwt` and the keys of its metadata document (an ID-JAG is for
/// confidential clients only), whose `grant_types` name the grant; the ID-JAG is checked
/// (`IdentityAssertionGrant`); the scopes are those the ID-JAG grants, the request asks for
/// (all of them when it names none), and the user's claims meet the AS's rule for; only then
/// are both assertions' `jti`s claimed, once across replicas (a client alone, with no good
/// ID-JAG, cannot fill the replay store). The token is an RFC 9068 JWT for the ID-JAG's
/// resource, bound to the key of the request's DPoP proof when it carries one (RFC 9449 §5:
/// `cnf.jkt`, `token_type: DPoP`). Errors are RFC 6749 §5.2's (and RFC 9449 §5's
/// `invalid_dpop_proof`).
struct TokenEndpoint {
    /// Unowned: the services outlive every request.
    unowned(unsafe) let services: WorkerServices
    let server: AuthorizationServerWorker

    static let grant = AuthorizationServerMetadata.jwtBearer
    /// An access token and the scopes it carries; for the code flow, a refresh token too.
    struct Issued {
        var token: IssuedAccessToken
        var scopes: [String]
        var refreshToken: String? = nil
        var grant: String
    }

    func handle(_ request: RoutedRequest) -> StageOutcome {
        let ctx = request.context
        guard request.head.method == .POST else {
            return .answer(
                GatewayResponse(status: 405, headers: [("Allow", "POST")], body: "", contentType: "text/plain"))
        }
        let type = request.head.fields.first("Content-Type").map {
            String($0.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard type == "application/x-www-form-urlencoded" else {
            return .answer(refusal(.invalidRequest("the body must be application/x-www-form-urlencoded"), ctx))
        }
        services.readOwnBody(request.exchange, ctx, limit: 16 * 1024) { body in take(body, request) }
        return .suspend
    }

    /// The form, then the client, then the grant; each answers through `request.answer`.
    private func take(_ body: [UInt8], _ request: RoutedRequest) {
        let ctx = request.context
        guard let pairs = FormEncoding.decode(Substring(String(decoding: body, as: UTF8.self))) else {
            return request.answer(refusal(.invalidRequest("the form is not well-formed"), ctx))
        }
        var form: [String: String] = [:]
        for (name, value) in pairs {
            guard form[name] == nil else {
                return request.answer(refusal(.invalidRequest("\(name.prefix(40)) is given twice"), ctx))
            }
            form[name] = value
        }
        guard let config = server.config else { return request.answer(refusal(.invalidRequest("no server"), ctx)) }
        let codeFlow = config.login != nil
        let jag = !config.identityAssertionIssuers.isEmpty
        let grantType = form["grant_type"]
        guard (grantType == Self.grant && jag) || (codeFlow && Self.codeFlowGrants.contains(grantType ?? "")) else {
            let offered = (codeFlow ? Self.codeFlowGrants : []) + (jag ? [Self.grant] : [])
            return request.answer(
                refusal(
                    TokenEndpointError(
                        "unsupported_grant_type", "this server takes \(offered.joined(separator: ", "))"), ctx))
        }
        let proof: DPoPProof?
        switch dpopProof(request.head) {
        case .failure(let e): return request.answer(refusal(e, ctx))
        case .success(let p): proof = p
        }
        let answer = { (result: Result<Issued, TokenEndpointError>) in request.answer(respond(result, ctx)) }
        switch grantType {
        case "authorization_code": return codeGrant(form, proof: proof, config, done: answer)
        case "refresh_token": return refreshGrant(form, proof: proof, config, done: answer)
        default: break
        }
        guard let assertion = form["assertion"] else {
            return request.answer(refusal(.invalidRequest("assertion is required"), ctx))
        }
        guard form["client_assertion_type"] == PresentedClientAssertion.type,
            let clientAssertion = form["client_assertion"],
            let claimed = PresentedClientAssertion.claimedClient(clientAssertion), let url = try? ClientIDURL(claimed),
            form["client_id"].map({ $0 == claimed }) ?? true
        else {
            return request.answer(
                refusal(
                    TokenEndpointError(
                        "invalid_client", "the client authenticates with private_key_jwt, its client_id a document URL"),
                    ctx))
        }
        authenticate(url, clientAssertion, grant: Self.grant, config) { result in
            switch result {
            case .failure(let e): request.answer(refusal(e, ctx))
            case .success((let client, _)):
                grant(assertion, form: form, client: client, proof: proof, config, done: answer)
            }
        }
    }

    /// The client: its document, its keys, its assertion (claimed later, with the grant).
    func authenticate(
        _ url: ClientIDURL, _ assertion: String, grant: String, _ config: AuthorizationServerConfig,
        done: @escaping (Result<(PresentedClientAssertion, ClientIDMetadataDocument), TokenEndpointError>) -> Void
    ) {
        guard let documents = server.documents else { return done(.failure(.init("invalid_client", "no documents"))) }
        let invalidClient = { (why: String) in TokenEndpointError("invalid_client", why) }
        documents.document(url) { outcome in
            let document: ClientIDMetadataDocument
            switch outcome {
            case .refused(let why): return done(.failure(invalidClient(why)))
            case .document(let d): document = d
            }
            guard document.grantTypes.contains(grant) else {
                return done(
                    .failure(
                        TokenEndpointError(
                            "unauthorized_client", "the client's metadata document does not list this grant type")))
            }
            documents.keys(of: document) { keys in
                switch keys {
                case .failure(let e): done(.failure(invalidClient(e.description)))
                case .success(let keys):
                    do throws(PresentedClientAssertion.Refusal) {
                        done(
                            .success(
                                (
                                    try PresentedClientAssertion(
                                        assertion, clientID: url.text, keys: keys, issuer: config.issuer,
                                        now: services.wallClock.seconds), document
                                )))
                    } catch {
                        done(.failure(invalidClient(error.description)))
                    }
                }
            }
        }
    }

    /// RFC 9449 §5: at most one `DPoP` field, a proof of this POST to this endpoint (no access
    /// token yet); nil when there is none.
    func dpopProof(_ head: HTTPRequestHead) -> Result<DPoPProof?, TokenEndpointError> {
        let (value, count) = head.fields.firstAndCount("DPoP")
        guard let value else { return .success(nil) }
        guard count == 1 else { return .failure(TokenEndpointError("invalid_dpop_proof", "more than one DPoP proof")) }
        let verifier = DPoPProofVerifier()
        do throws(DPoPProofError) {
            return .success(
                try verifier.verify(
                    value,
                    request: .init(
                        method: "POST", uri: server.tokenEndpoint, accessToken: nil, now: services.wallClock.seconds)))
        } catch {
            return .failure(TokenEndpointError("invalid_dpop_proof", error.reason))
        }
    }

    /// The ID-JAG and the scopes; then the assertions (and the proof) once; then the token.
    private func grant(
        _ assertion: String, form: [String: String], client: PresentedClientAssertion, proof: DPoPProof?,
        _ config: AuthorizationServerConfig, done: @escaping (Result<Issued, TokenEndpointError>) -> Void
    ) {
        var trusted: [String: (keys: JWKSet, algorithms: Set<JWSAlgorithm>)] = [:]
        var names: [String: String] = [:]
        for name in config.identityAssertionIssuers {
            guard let issuer = services.config.issuers[name],
                let keys = services.authentication.tokens.issuerKeys[issuer: name]
            else {
                continue
            }
            for iss in [issuer.issuer] + issuer.issuerAliases {
                trusted[iss] = (keys, issuer.algorithms)
                names[iss] = name
            }
        }
        let jag: IdentityAssertionGrant
        do throws(IdentityAssertionGrant.Refusal) {
            jag = try IdentityAssertionGrant(
                assertion,
                expecting: .init(
                    asIssuer: config.issuer, resources: server.resources, clientID: client.clientID, issuers: trusted),
                now: services.wallClock.seconds)
        } catch {
            return done(.failure(.invalidGrant(error.description)))
        }
        if let resource = form["resource"], resource != jag.resource {
            return done(.failure(TokenEndpointError("invalid_target", "the resource is not the ID-JAG's")))
        }
        let offered = Set(jag.scopes)
        let asked = form["scope"].map { Set($0.split(separator: " ").map(String.init)) } ?? offered
        let issuerName = names[jag.issuer]
        let granted = config.scopes.filter { scope in
            asked.contains(scope.name) && offered.contains(scope.name)
                && scope.rule.check(jag.claims, issuer: issuerName) == nil
        }.map(\.name)
        guard !granted.isEmpty else {
            return done(
                .failure(TokenEndpointError("invalid_scope", "no scope asked for is one the user may be granted")))
        }
        // The client's first: a replayed client assertion is the client's error, a replayed
        // ID-JAG the grant's.
        claimOnce(
            ReplayID(assertionOf: client.clientID, jti: client.jti, kind: 4), .clientAssertion,
            until: client.expiresAt + 60,
            replayed: TokenEndpointError("invalid_client", "the client assertion was used before")
        ) { failed in
            if let failed { return done(.failure(failed)) }
            claimOnce(
                ReplayID(assertionOf: jag.issuer, jti: jag.jti, kind: 5), .identityAssertion,
                until: jag.expiresAt + 60, replayed: .invalidGrant("the ID-JAG was used before")
            ) { failed in
                if let failed { return done(.failure(failed)) }
                guard let proof else {
                    return done(issue(jag, scopes: granted, client: client.clientID, jkt: nil, config))
                }
                // RFC 9449 §11.1: a proof is used once.
                claimOnce(
                    ReplayID(jkt: proof.jkt, jti: proof.jti), .dpopProof, until: proof.acceptableUntil + 1,
                    replayed: TokenEndpointError("invalid_dpop_proof", "the DPoP proof was used before")
                ) { failed in
                    if let failed { return done(.failure(failed)) }
                    done(issue(jag, scopes: granted, client: client.clientID, jkt: proof.jkt, config))
                }
            }
        }
    }

    /// Claims an assertion's `jti` once, in its own namespace of the replay store.
    func claimOnce(
        _ id: ReplayID, _ kind: ReplayKind, until: Int64, replayed: TokenEndpointError,
        done: @escaping (TokenEndpointError?) -> Void
    ) {
        services.authentication.replay.claim(id, kind: kind, until: until, now: services.wallClock.seconds) { verdict in
            switch verdict {
            case .fresh: done(nil)
            case .replayed: done(replayed)
            case .unavailable, .refused:
                // The store's own words stay in the log: not the client's to read.
                done(TokenEndpointError("temporarily_unavailable", "the gateway cannot check assertions right now"))
            }
        }
    }

    private func issue(
        _ jag: IdentityAssertionGrant, scopes granted: [String], client: String, jkt: String?,
        _ config: AuthorizationServerConfig
    ) -> Result<Issued, TokenEndpointError> {
        var extra = JSONObject()
        for name in IssuedAccessToken.identityClaims where jag.claims[name] != nil { extra[name] = jag.claims[name] }
        let g = IssuedAccessToken.Grant(
            issuer: config.issuer, subject: jag.subject, idpIssuer: jag.issuer, clientID: client,
            resource: jag.resource, scopes: granted, jkt: jkt, extraClaims: extra)
        return sign(g, config).map { Issued(token: $0, scopes: granted, grant: "jwt-bearer") }
    }

    /// An RFC 9068 access token for `g`, signed with the AS's first key.
    func sign(_ g: IssuedAccessToken.Grant, _ config: AuthorizationServerConfig)
        -> Result<IssuedAccessToken, TokenEndpointError>
    {
        guard let signer = config.signingKeys.first else {
            return .failure(TokenEndpointError("server_error", "no signing key"))
        }
        do {
            return .success(
                try IssuedAccessToken(
                    g, lifetime: Int64(config.accessTokenTTL), now: services.wallClock.seconds, key: signer.key,
                    alg: signer.alg, kid: signer.kid))
        } catch {
            return .failure(TokenEndpointError("server_error", "the token could not be signed"))
        }
    }

    private func respond(_ result: Result<Issued, TokenEndpointError>, _ ctx: RequestContext) -> GatewayResponse {
        switch result {
        case .failure(let e): return refusal(e, ctx)
        case .success(let issued):
            let token = issued.token
            server.hub.issued(grant: issued.grant, client: token.clientID, at: services.wallClock.now)
            var body = JSONObject([
                "access_token": .string(token.token), "token_type": .string(token.isBound ? "DPoP" : "Bearer"),
                "expires_in": .number(String(token.expiresAt - services.wallClock.seconds)),
                "scope": .string(issued.scopes.joined(separator: " ")),
                "issued_token_type": .string("urn:ietf:params:oauth:token-type:access_token")
            ])
            if let refresh = issued.refreshToken { body["refresh_token"] = .string(refresh) }
            // `Cache-Control: no-store` is on every answer of the gateway's own (GatewayResponse).
            var r = GatewayResponse(
                status: 200, headers: [("Pragma", "no-cache")], body: JSONSerializer.serialize(.object(body)),
                contentType: "application/json")
            r.detail = "authorization server: token issued (\(issued.grant), jti \(token.jti))"
            return r
        }
    }

    /// RFC 6749 §5.2: 400 with `error` and `error_description`; 401 for `invalid_client`.
    func refusal(_ e: TokenEndpointError, _ ctx: RequestContext) -> GatewayResponse {
        server.hub.refused(endpoint: "token", error: e.code)
        let status: Int =
            switch e.code {
            case "invalid_client": 401
            case "temporarily_unavailable": 503
            case "server_error": 500
            default: 400
            }
        let body = JSONObject(["error": .string(e.code), "error_description": .string(e.description)])
        var headers: [(String, String)] = [("Pragma", "no-cache")]
        if status == 503 { headers.append(("Retry-After", "1")) }
        var r = GatewayResponse(
            status: status, headers: headers, body: JSONSerializer.serialize(.object(body)),
            contentType: "application/json")
        r.detail = "authorization server: token refused: \(e.code): \(e.description)"
        r.reason = e.code
        return r
    }
}
