import Foundation
import JOSE
import OAuth
import Reactor

/// The code flow's grants at the token endpoint: `authorization_code` (RFC 6749 §4.1.3, with
/// PKCE, RFC 7636 §4.6) and `refresh_token` (§6), with rotation and reuse detection (RFC 9700
/// §4.14.2). The client is public (`client_id`, and PKCE proves it is the one that asked) or
/// authenticates with `private_key_jwt`, as its metadata document says.
extension TokenEndpoint {
    static let codeFlowGrants = ["authorization_code", "refresh_token"]

    /// The client of a code-flow request, and its metadata document.
    private func client(
        _ form: [String: String], grant: String, _ config: AuthorizationServerConfig,
        done: @escaping (Result<ClientIDMetadataDocument, TokenEndpointError>) -> Void
    ) {
        let invalidClient = { (why: String) in TokenEndpointError("invalid_client", why) }
        if let assertion = form["client_assertion"] {
            guard form["client_assertion_type"] == PresentedClientAssertion.type,
                let claimed = PresentedClientAssertion.claimedClient(assertion), let url = try? ClientIDURL(claimed),
                form["client_id"].map({ $0 == claimed }) ?? true
            else { return done(.failure(invalidClient("the client assertion does not name a client document URL"))) }
            authenticate(url, assertion, grant: grant, config) { result in
                switch result {
                case .failure(let e): done(.failure(e))
                case .success((let presented, let document)):
                    claimOnce(
                        ReplayID(assertionOf: presented.clientID, jti: presented.jti, kind: 4), .clientAssertion,
                        until: presented.expiresAt + 60, replayed: invalidClient("the client assertion was used before")
                    ) { failed in done(failed.map { .failure($0) } ?? .success(document)) }
                }
            }
            return
        }
        guard let text = form["client_id"], let id = ClientIdentifier(text) else {
            return done(
                .failure(invalidClient("client_id is required: a metadata document URL or a client registered here")))
        }
        server.client(id) { outcome in
            switch outcome {
            case .refused(let why): done(.failure(invalidClient(why)))
            case .document(let document):
                // A client with keys proves itself with them (RFC 7591 §2's method is binding).
                guard case .none = document.authentication else {
                    return done(.failure(invalidClient("the client authenticates with private_key_jwt")))
                }
                guard document.grantTypes.contains(grant) else {
                    return done(
                        .failure(
                            TokenEndpointError(
                                "unauthorized_client", "the client's metadata document does not list \(grant)")))
                }
                done(.success(document))
            }
        }
    }

    /// A DPoP proof's `jti` used once (RFC 9449 §11.1): nil when it was fresh (or there is none).
    private func claimProof(_ proof: DPoPProof?, done: @escaping (TokenEndpointError?) -> Void) {
        guard let proof else { return done(nil) }
        claimOnce(
            ReplayID(jkt: proof.jkt, jti: proof.jti), .dpopProof, until: proof.acceptableUntil + 1,
            replayed: TokenEndpointError("invalid_dpop_proof", "the DPoP proof was used before"), done: done)
    }

    private func accessToken(_ g: GrantSubject, grantID: String, jkt: String?, _ config: AuthorizationServerConfig)
        -> Result<IssuedAccessToken, TokenEndpointError>
    {
        // The grant keeps the claims its scope rules read; the token carries those a route maps.
        var extra = JSONObject()
        for name in IssuedAccessToken.identityClaims where g.claims[name] != nil { extra[name] = g.claims[name] }
        return sign(
            IssuedAccessToken.Grant(
                issuer: config.issuer, subject: g.subject, idpIssuer: g.idpIssuer, clientID: g.clientID,
                resource: g.resource, scopes: g.scopes, jkt: jkt, grantID: grantID, extraClaims: extra), config)
    }

    private static let unavailable = TokenEndpointError(
        "temporarily_unavailable", "the server cannot check grants right now")

    // MARK: authorization_code

    func codeGrant(
        _ form: [String: String], proof: DPoPProof?, _ config: AuthorizationServerConfig,
        done: @escaping (Result<Issued, TokenEndpointError>) -> Void
    ) {
        guard let code = form["code"] else {
            return done(.failure(.invalidRequest("code is required")))
        }
        client(form, grant: "authorization_code", config) { result in
            let document: ClientIDMetadataDocument
            switch result {
            case .failure(let e): return done(.failure(e))
            case .success(let d): document = d
            }
            server.grants.redeemCode(code, tokensLive: Int64(config.accessTokenTTL)) { taken in
                switch taken {
                case .failure: done(.failure(Self.unavailable))
                case .success(.unknown): done(.failure(.invalidGrant("the code is not valid: unknown or expired")))
                case .success(.again(let record)):
                    // RFC 6749 §4.1.2: a code used twice; what it gave the first time ends. Only
                    // on its own client's word: another client proves nothing about the code.
                    guard record.grant.clientID == document.clientID.text else {
                        return done(.failure(.invalidGrant("the code is not valid: unknown or expired")))
                    }
                    server.grants.end(
                        grantID: record.grantID, familyID: record.familyID, accessTokenTTL: config.accessTokenTTL,
                        familyTTL: config.refreshTokenTTL
                    ) {
                        done(.failure(.invalidGrant("the code was used before: the tokens it gave are revoked")))
                    }
                case .success(.first(let record)):
                    do throws(TokenEndpointError) {
                        try record.redeem(
                            clientID: document.clientID.text, redirectURI: form["redirect_uri"],
                            resource: form["resource"], verifier: form["code_verifier"], jkt: proof?.jkt,
                            now: services.wallClock.seconds)
                    } catch {
                        return done(.failure(error))
                    }
                    stands(record.grant, grantID: record.grantID, since: record.issuedAt, config) { verdict in
                        switch verdict {
                        case .stands: break
                        case .unknown: return done(.failure(Self.unavailable))
                        case .ended(let why):
                            return server.grants.end(
                                grantID: record.grantID, familyID: record.familyID,
                                accessTokenTTL: config.accessTokenTTL, familyTTL: config.refreshTokenTTL
                            ) { done(.failure(.invalidGrant(why))) }
                        }
                        claimProof(proof) { failed in
                            if let failed { return done(.failure(failed)) }
                            issueFromCode(record, document: document, jkt: proof?.jkt, config, done: done)
                        }
                    }
                }
            }
        }
    }

    private func issueFromCode(
        _ record: AuthorizationCodeRecord, document: ClientIDMetadataDocument, jkt: String?,
        _ config: AuthorizationServerConfig, done: @escaping (Result<Issued, TokenEndpointError>) -> Void
    ) {
        let issue = { (refresh: String?) in
            done(
                accessToken(record.grant, grantID: record.grantID, jkt: jkt, config).map {
                    Issued(token: $0, scopes: record.grant.scopes, refreshToken: refresh, grant: "authorization_code")
                })
        }
        guard document.grantTypes.contains("refresh_token") else { return issue(nil) }
        // No longer than the user's sign-in could last at the gateway: the claims the grant
        // holds are that sign-in's.
        let now = services.wallClock.seconds
        var lifetime = Int64(config.refreshTokenTTL)
        if let authTime = record.grant.authTime {
            lifetime = min(lifetime, authTime + Int64(services.config.session.absoluteTimeout) - now)
        }
        guard lifetime > 0 else { return issue(nil) }
        let (family, refresh) = RefreshTokenFamily.start(
            record.grant, id: record.familyID, grantID: record.grantID, lifetime: lifetime, now: now, dpopJKT: jkt)
        server.grants.saveFamily(family) { saved in
            switch saved {
            // Its key holds a tombstone: the code was used again meanwhile, and its grant ended.
            case .success(false): done(.failure(.invalidGrant("the code was used before: its grant is revoked")))
            case .success(true): issue(refresh.text)
            // A family the store would not keep gives no refresh token: the client signs in again.
            case .failure: issue(nil)
            }
        }
    }

    // MARK: refresh_token

    func refreshGrant(
        _ form: [String: String], proof: DPoPProof?, _ config: AuthorizationServerConfig,
        done: @escaping (Result<Issued, TokenEndpointError>) -> Void
    ) {
        guard let text = form["refresh_token"] else {
            return done(.failure(.invalidRequest("refresh_token is required")))
        }
        guard let presented = RefreshTokenFamily.Token(text) else {
            return done(.failure(.invalidGrant("the refresh token is not valid")))
        }
        client(form, grant: "refresh_token", config) { result in
            let document: ClientIDMetadataDocument
            switch result {
            case .failure(let e): return done(.failure(e))
            case .success(let d): document = d
            }
            server.grants.family(presented.familyID) { found in
                switch found {
                case .failure: return done(.failure(Self.unavailable))
                case .success(nil): return done(.failure(.invalidGrant("the refresh token is not valid")))
                case .success(.some(let stored)):
                    rotate(
                        stored, presented, client: document.clientID.text, form: form, proof: proof, config, done: done)
                }
            }
        }
    }

    private func rotate(
        _ stored: AuthorizationGrants.StoredFamily, _ presented: RefreshTokenFamily.Token, client: String,
        form: [String: String], proof: DPoPProof?, _ config: AuthorizationServerConfig,
        done: @escaping (Result<Issued, TokenEndpointError>) -> Void
    ) {
        let family = stored.family
        let end = { (why: String) in
            server.grants.end(
                grantID: family.grantID, familyID: family.id, accessTokenTTL: config.accessTokenTTL,
                familyTTL: config.refreshTokenTTL
            ) { done(.failure(.invalidGrant(why))) }
        }
        switch family.use(presented, clientID: client, now: services.wallClock.seconds) {
        case .expired: return done(.failure(.invalidGrant("the refresh token has expired")))
        case .otherClient: return done(.failure(.invalidGrant("the refresh token was issued to another client")))
        case .unknown: return done(.failure(.invalidGrant("the refresh token is not valid")))
        case .reused:
            // A DPoP-bound family's tokens are nothing without its key (RFC 9449 §5.2): a replaced
            // one without a proof of it proves no theft, and ends nothing.
            if let bound = family.dpopJKT, proof?.jkt != bound {
                return done(.failure(.invalidGrant("the refresh token is bound to another DPoP key")))
            }
            // RFC 9700 §4.14.2: a token the family replaced was stolen, or its thief came first;
            // the family ends, and the access tokens of its grant with it.
            return end("the refresh token was used before: its grant is revoked")
        case .rotated(let next, let token):
            // RFC 9449 §5.2: a public client's refresh token is bound to its DPoP key.
            if let bound = family.dpopJKT, proof?.jkt != bound {
                return done(.failure(.invalidGrant("the refresh token is bound to another DPoP key")))
            }
            if let resource = form["resource"], resource != family.grant.resource {
                return done(.failure(TokenEndpointError("invalid_target", "the resource is not the grant's")))
            }
            guard server.resources.contains(family.grant.resource) else {
                return done(.failure(.invalidGrant("the grant's resource is no longer served here")))
            }
            stands(family.grant, grantID: family.grantID, since: family.createdAt, config) { verdict in
                switch verdict {
                case .ended(let why): end(why)
                case .unknown: done(.failure(Self.unavailable))
                case .stands:
                    rotateStanding(stored, next: next, token: token, form: form, proof: proof, config, done: done)
                }
            }
        }
    }

    enum Standing {
        case stands
        case ended(String)
        /// The store cannot say whether its consent stands: nothing is ended, nothing issued.
        case unknown
    }

    /// Whether a grant still stands, and if not why: the grant itself ended (its `sid` revoked: a reused
    /// code or refresh token, whose tombstone a store failure may have lost); the user's sign-in
    /// revoked at the IdP since it began (Shared Signals: RFC 9700 §4.14.2, refresh tokens end
    /// with it), by the user or by the IdP session it came from; or the consent it was made
    /// under revoked or expired.
    private func stands(
        _ grant: GrantSubject, grantID: String, since: Int64, _ config: AuthorizationServerConfig,
        done: @escaping (Standing) -> Void
    ) {
        let now = services.wallClock.seconds
        let revocations = services.revocations
        if revocations.standing {
            if revocations.check(
                sub: nil, email: nil, issuer: AuthorizationServerConfig.issuerName, iat: since, sid: grantID, now: now)
                != nil
            {
                return done(.ended("the grant was revoked"))
            }
            if let issuerName = loginIssuerName(config),
                revocations.check(
                    sub: grant.subject, email: grant.claims["email"]?.string, issuer: issuerName,
                    iat: grant.authTime ?? since, sid: grant.claims["sid"]?.string, now: now) != nil
            {
                return done(.ended("the user's sign-in was revoked at the identity provider"))
            }
        }
        guard let consent = grant.consentID else { return done(.stands) }
        server.grants.consentStands(consent, for: grant, ttl: config.consentTTL) { standing in
            switch standing {
            case true: done(.stands)
            case false: done(.ended("the consent this grant was made under was revoked or has expired"))
            case nil: done(.unknown)
            }
        }
    }

    private func rotateStanding(
        _ stored: AuthorizationGrants.StoredFamily, next: RefreshTokenFamily, token: RefreshTokenFamily.Token,
        form: [String: String], proof: DPoPProof?, _ config: AuthorizationServerConfig,
        done: @escaping (Result<Issued, TokenEndpointError>) -> Void
    ) {
        let family = stored.family
        // The scopes the AS's rules grant now (a reload may have narrowed them), then those asked.
        var grant = family.grant
        grant.scopes = config.scopes.filter {
            grant.scopes.contains($0.name) && $0.rule.check(grant.claims, issuer: loginIssuerName(config)) == nil
        }.map(\.name)
        if let asked = form["scope"] {
            // RFC 6749 §6: the same scopes or fewer.
            let list = asked.split(separator: " ").map(String.init)
            guard !list.isEmpty, list.allSatisfy(family.grant.scopes.contains) else {
                return done(.failure(TokenEndpointError("invalid_scope", "the scopes are not within the grant's")))
            }
            grant.scopes = grant.scopes.filter(list.contains)
        }
        guard !grant.scopes.isEmpty else {
            return done(.failure(.invalidGrant("the user may no longer be granted these scopes")))
        }
        // The proof first: a refused one must leave the family as it was, or the client's
        // retry with the same token would look like a reuse.
        claimProof(proof) { failed in
            if let failed { return done(.failure(failed)) }
            server.grants.rotate(stored, to: next) { swapped in
                switch swapped {
                case .failure: done(.failure(Self.unavailable))
                case .success(false):
                    done(.failure(.invalidGrant("the refresh token was used by another request just now")))
                case .success(true):
                    let jkt = family.dpopJKT ?? proof?.jkt
                    done(
                        accessToken(grant, grantID: family.grantID, jkt: jkt, config).map {
                            Issued(
                                token: $0, scopes: grant.scopes, refreshToken: token.text, grant: "refresh_token")
                        })
                }
            }
        }
    }

    /// The `issuers:` entry of the `login` client: whose claims the grants hold.
    private func loginIssuerName(_ config: AuthorizationServerConfig) -> String? {
        config.login.flatMap { services.config.clients[$0]?.issuer }
    }
}
