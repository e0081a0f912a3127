import Foundation
import JOSE
import OAuth
import Reactor

/// What authenticating a request decided.
enum AuthDecision {
    case allow(VerifiedAccessToken)
    /// A wire error (RFC 6750 §3): status, the challenge, and a log detail.
    case deny(status: Int, challenge: Challenge, detail: String)
    /// The gateway cannot decide (the issuer's keys never loaded): 503, not the token's fault.
    case unavailable(detail: String)
}

/// The `auth: bearer` stage for one worker: extract the token (RFC 6750 §2), verify it with
/// the issuer its `iss` names (per-worker cache of verified tokens first), refuse
/// DPoP-bound tokens sent as Bearer, then check the route's scopes and claims.
final class BearerAuthenticator {
    private(set) var keys: [String: JWKSet] = [:]
    private var cache: ValidatedTokenCache<VerifiedAccessToken>
    private var cacheEnabled = true
    private var verifiers: [Int: AccessTokenVerifier] = [:]
    /// Routes whose issuers introspect opaque tokens: the first such issuer on the route.
    private var introspection: [Int: (policy: IssuerPolicy, config: IntrospectionConfig, caFile: String?)] = [:]
    let introspector: Introspector
    /// Asks the main loop to refetch an issuer's keys; the completion runs on this worker's
    /// loop with the new set (nil: nothing changed).
    var requestRefetch: ((_ issuer: String, _ done: @escaping (JWKSet?) -> Void) -> Void)?

    init(loop: EventLoop, cacheCapacity: Int = 10_000) {
        cache = ValidatedTokenCache(capacity: cacheCapacity, ttl: 120)
        introspector = Introspector(loop: loop)
    }

    var cacheHits: Int { cache.hits }
    var cacheMisses: Int { cache.misses }

    func apply(_ config: GatewayConfig) {
        verifiers = [:]
        introspection = [:]
        for route in config.routes {
            guard let bearer = route.bearer else { continue }
            let policies = bearer.issuers.compactMap { name in
                config.issuers[name].map {
                    IssuerPolicy(name: $0.name, issuer: $0.issuer, algorithms: $0.algorithms, audiences: $0.audiences,
                                 leeway: Int64($0.leeway), requiredType: $0.accessTokenType)
                }
            }
            verifiers[route.index] = AccessTokenVerifier(issuers: policies)
            for policy in policies {
                if let issuer = config.issuers[policy.name], let intro = issuer.introspection {
                    introspection[route.index] = (policy, intro, issuer.caFile)
                    break
                }
            }
        }
        cacheEnabled = config.tokenCacheEntries > 0
        cache = ValidatedTokenCache(capacity: max(1, config.tokenCacheEntries), ttl: Int64(config.tokenCacheTTL))
        introspector.reset()
    }

    /// A new key set for an issuer: tokens verified with the old one are verified again.
    func updateKeys(_ issuer: String, _ set: JWKSet) {
        keys[issuer] = set
        cache = ValidatedTokenCache(capacity: cache.capacity, ttl: cache.ttl)
    }

    func authenticate(_ req: ServerRequest, route: RouteConfig, query: String?, done: @escaping (AuthDecision) -> Void) {
        guard let bearer = route.bearer, let verifier = verifiers[route.index] else {
            done(.deny(status: 500, challenge: Challenge(realm: "tokengate"), detail: "route has no bearer config"))
            return
        }
        let realm = bearer.realm
        let authorization = req.headers.values("Authorization")
        let queryTokens = query.map(Self.accessTokens(inQuery:)) ?? []
        // RFC 6750 §2.2: only a form-encoded body of a request with a body, and only where the
        // route opts in; the parameter is then taken out of the body unless the route
        // forwards the token.
        var formTokens: [String] = []
        if req.bodyLength > 0, req.method != .GET,
           let type = req.headers.first("Content-Type")?.lowercased(), type.hasPrefix("application/x-www-form-urlencoded") {
            let body = String(decoding: req.bodyBytes, as: UTF8.self)
            formTokens = Self.accessTokens(inQuery: body)
            if !formTokens.isEmpty && bearer.tokenInBody && !bearer.forwardToken {
                let kept = body.split(separator: "&").filter { !$0.hasPrefix("access_token=") }.joined(separator: "&")
                req.replaceBody(Array(kept.utf8))
            }
        }
        let token: String
        switch BearerTokenExtractor.extract(authorization: authorization, formTokens: formTokens, queryTokens: queryTokens,
                                            sources: TokenSources(formBody: bearer.tokenInBody, query: bearer.tokenInQuery)) {
        case .none:
            // RFC 6750 §3.1: no credentials → a challenge without an error code.
            done(.deny(status: 401, challenge: Challenge(realm: realm), detail: "no credentials"))
            return
        case .invalid(let reason):
            done(.deny(status: 400, challenge: Challenge(realm: realm, error: .invalid_request, errorDescription: reason), detail: reason))
            return
        case .dpop:
            done(.deny(status: 401, challenge: Challenge(realm: realm, error: .invalid_token, errorDescription: "this route accepts Bearer tokens"),
                       detail: "DPoP scheme on a bearer route"))
            return
        case .bearer(let t):
            token = t
        }
        let now = Int64(Date().timeIntervalSince1970)
        if cacheEnabled, let hit = cache.get(token, now: now), verifier.issuers.contains(where: { $0.name == hit.issuer }) {
            done(authorize(hit, bearer: bearer))
            return
        }
        // A JWS has exactly two dots; anything else is opaque, for the issuer that introspects.
        if token.utf8.lazy.filter({ $0 == UInt8(ascii: ".") }).count != 2, let intro = introspection[route.index] {
            introspector.introspect(token, issuer: intro.policy, config: intro.config, caFile: intro.caFile) { [weak self] verdict in
                guard let self else { return }
                switch verdict {
                case .active(let t): done(self.authorize(t, bearer: bearer))
                case .inactive(let reason):
                    done(.deny(status: 401, challenge: Challenge(realm: realm, error: .invalid_token, errorDescription: "the token is not active"),
                               detail: reason))
                }
            }
            return
        }
        verify(token, verifier: verifier, bearer: bearer, now: now, refetched: false, done: done)
    }

    private func verify(_ token: String, verifier: AccessTokenVerifier, bearer: BearerRouteConfig, now: Int64,
                        refetched: Bool, done: @escaping (AuthDecision) -> Void) {
        let realm = bearer.realm
        switch verifier.verify(token, now: now, keys: { self.keys[$0] }) {
        case .success(let verified):
            if cacheEnabled { cache.put(token, verified, expiresAt: verified.expiresAt, now: now) }
            done(authorize(verified, bearer: bearer))
        case .failure(.unknownKey(let issuer)) where !refetched && requestRefetch != nil:
            // One rate-limited refetch (the main loop decides whether it may), then retry once.
            requestRefetch?(issuer) { [weak self] set in
                guard let self else { return }
                if let set { self.updateKeys(issuer, set) }
                self.verify(token, verifier: verifier, bearer: bearer, now: Int64(Date().timeIntervalSince1970), refetched: true, done: done)
            }
        case .failure(.keysUnavailable(let issuer)):
            done(.unavailable(detail: "no keys loaded for issuer \(issuer)"))
        case .failure(let failure):
            done(.deny(status: 401, challenge: Challenge(realm: realm, error: .invalid_token, errorDescription: Self.describe(failure)),
                       detail: "\(failure)"))
        }
    }

    private func authorize(_ token: VerifiedAccessToken, bearer: BearerRouteConfig) -> AuthDecision {
        if token.jkt != nil {
            // RFC 9449 §7.2: a DPoP-bound token presented as a Bearer token is invalid.
            return .deny(status: 401, challenge: Challenge(realm: bearer.realm, error: .invalid_token,
                                                           errorDescription: "the token is DPoP-bound; present it with a DPoP proof"),
                         detail: "DPoP-bound token sent as Bearer")
        }
        if let failure = bearer.requirement.check(token.claims) {
            let detail: String
            switch failure {
            case .missingScopes(let s): detail = "missing scopes: \(s.joined(separator: " "))"
            case .claim(let c): detail = "claim requirement not met: \(c)"
            }
            return .deny(status: 403, challenge: Challenge(realm: bearer.realm, error: .insufficient_scope,
                                                           errorDescription: "the token does not grant access to this resource",
                                                           scope: bearer.requirement.scopes.isEmpty ? nil : bearer.requirement.scopes),
                         detail: detail)
        }
        return .allow(token)
    }

    /// The wire description: what kind of problem, never which key or claim value.
    static func describe(_ f: AccessTokenVerifier.Failure) -> String {
        switch f {
        case .malformed: return "the token is malformed"
        case .unknownIssuer: return "the token's issuer is not accepted here"
        case .unknownKey: return "the token's signing key is unknown"
        case .keysUnavailable: return "the issuer's keys are not available"
        case .rejected(let e):
            switch e.code {
            case .expired: return "the token has expired"
            case .notYetValid, .issuedInFuture: return "the token is not valid yet"
            case .audienceMismatch: return "the token is for another audience"
            case .typeMismatch: return "the token is not an access token"
            default: return "the token is invalid"
            }
        }
    }

    /// `access_token` values of a raw query string (RFC 6750 §2.3), percent-decoded.
    static func accessTokens(inQuery query: String) -> [String] {
        query.split(separator: "&").compactMap { pair in
            guard pair.hasPrefix("access_token=") else { return nil }
            return String(pair.dropFirst(13)).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
    }
}
