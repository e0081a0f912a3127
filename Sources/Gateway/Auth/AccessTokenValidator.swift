import Foundation
import JOSE
import OAuth
import Reactor

/// Access-token validation for one worker, whatever scheme carried the token: JWTs are
/// verified with the issuer their `iss` names (per-worker cache of verified tokens first;
/// one rate-limited key refetch on an unknown `kid`), opaque tokens are introspected (RFC
/// 7662). Scopes, claims and the DPoP binding are the caller's.
final class AccessTokenValidator {
    enum Verdict {
        case valid(VerifiedAccessToken)
        /// `description` goes on the wire (never which key or claim value), `detail` to the log.
        case invalid(description: String, detail: String)
        case unavailable(UnavailableReason, detail: String)
    }

    /// The issuers' keys, with the one refetch on an unknown `kid` (shared with the login code).
    let issuerKeys: IssuerKeyResolver
    private var cache: ValidatedTokenCache<VerifiedAccessToken>
    private var cacheEnabled = true
    /// What one token route validates with, made with each config: its issuers' verifier,
    /// and the first of them that introspects opaque tokens. A request gets its route's from
    /// the route plan it was routed by (`TokenRoutePlan`), never by index from a newer config.
    struct RouteRules {
        let verifier: AccessTokenVerifier
        let introspection: (policy: IssuerPolicy, config: IntrospectionConfig, caFile: String?)?
        /// The audiences a token of each issuer (by name) may name to be accepted on this
        /// route (`RouteAudiences`); the verifier's are every route's of the issuer.
        let audiences: RouteAudiences
    }
    private var rules: [Int: RouteRules] = [:]
    let introspector: Introspector
    /// The access tokens' protected headers this loop has parsed (see `JWSHeaderMemo`).
    private let headerMemo = JWSHeaderMemo()
    /// "Now" for token `exp`/`nbf`/`iat` and the cache of verified tokens.
    let wallClock: any WallClock
    /// Bumped when what a verdict rests on may change: a config, an issuer's key set. What
    /// callers keep of a verdict (`BearerMemo`) holds for one generation.
    private(set) var generation = 0

    init(
        loop: EventLoop, wallClock: any WallClock, cacheCapacity: Int = 10_000,
        sharedIntrospection: SharedAnswerCache? = nil
    ) {
        self.wallClock = wallClock
        issuerKeys = IssuerKeyResolver { seconds, fire in
            let timer = LoopTimer(loop: loop, seconds: seconds, fire)
            return { timer.cancel() }
        }
        cache = ValidatedTokenCache(capacity: cacheCapacity, ttl: 120)
        introspector = Introspector(loop: loop, wallClock: wallClock, shared: sharedIntrospection)
        // A new key set for an issuer: tokens verified with the old one are verified again.
        introspector.keys = issuerKeys
        issuerKeys.onUpdate = { [unowned self] _ in
            self.cache = ValidatedTokenCache(capacity: self.cache.capacity, ttl: self.cache.ttl)
            self.generation += 1
        }
    }

    var cacheHits: Int { cache.hits }
    var cacheMisses: Int { cache.misses }

    /// The rules of the route at `index` in the config applied last.
    func rules(forRoute index: Int) -> RouteRules? { rules[index] }

    func apply(_ config: GatewayConfig) {
        rules = [:]
        let resources = RouteAudiences.resources(of: config)
        let allResources = Set(resources.values.joined())
        for route in config.routes {
            guard let tokens = route.options.auth.tokenRoute else { continue }
            let policies = tokens.issuers.compactMap { name in
                config.issuers[name].map {
                    // What any route of the issuer accepts, so that a verified token (and an
                    // introspection answer) is cached alike for all of them; each route then
                    // keeps to its own audiences.
                    IssuerPolicy(
                        name: $0.name, issuer: $0.issuer, algorithms: $0.algorithms,
                        audiences: $0.audiences + (resources[name] ?? []),
                        leeway: Int64($0.leeway), requiredType: $0.accessTokenType, scopeClaim: $0.scopeClaim
                    ).with(issuer: $0)
                }
            }
            var introspecting: (policy: IssuerPolicy, config: IntrospectionConfig, caFile: String?)?
            for policy in policies {
                if let issuer = config.issuers[policy.name], let intro = issuer.introspection {
                    introspecting = (policy, intro, issuer.caFile)
                    break
                }
            }
            rules[route.index] = RouteRules(
                verifier: AccessTokenVerifier(issuers: policies), introspection: introspecting,
                audiences: RouteAudiences(route: tokens, config: config, resources: allResources))
        }
        generation += 1
        issuerKeys.refetchWait = config.issuers.mapValues(\.unknownKidWait)
        cacheEnabled = config.tokenCacheEntries > 0
        cache = ValidatedTokenCache(capacity: max(1, config.tokenCacheEntries), ttl: Int64(config.tokenCacheTTL))
        introspector.reset()
        introspector.shared?.sealer = CookieSealer(sessionKeysOf: config)
    }

    /// Until when a valid `token` may be taken as valid again without another check: while
    /// its verified-token cache entry lives. nil with the cache off, or if it is not there.
    func trustedUntil(_ token: String) -> Int64? {
        guard cacheEnabled else { return nil }
        return cache.expiry(of: token, now: wallClock.seconds)
    }

    /// Validates `token` for the route; `done` may run now or later on this loop.
    func validate(_ token: String, rules: RouteRules?, done: @escaping (Verdict) -> Void) {
        if let verdict = validateNow(token, rules: rules) {
            done(verdict)
        } else {
            validateLater(token, rules: rules, done: done)
        }
    }

    /// The verdict, when this loop can give it at once: from the cache, or by verifying a
    /// JWT with the keys at hand. nil when the token must be introspected, or its issuer's
    /// keys refetched for an unknown `kid`: then `validateLater` answers.
    func validateNow(_ token: String, rules: RouteRules?) -> Verdict? {
        guard let verifier = rules?.verifier else {
            return .invalid(description: "the token is invalid", detail: "route has no token verifier")
        }
        let now = wallClock.seconds
        if cacheEnabled, let hit = cache.get(token, now: now),
            verifier.issuers.contains(where: { $0.name == hit.issuer })
        {
            return Self.onRoute(.valid(hit), rules)
        }
        // A JWS has exactly two dots; anything else is opaque, for the issuer that introspects.
        if rules?.introspection != nil && !Self.hasTwoDots(token) { return nil }
        let outcome = verifier.verify(token, now: now, keys: { issuerKeys[issuer: $0] }, headerMemo: headerMemo)
        if case .failure(.unknownKey) = outcome, issuerKeys.requestRefetch != nil { return nil }
        return Self.onRoute(verdict(outcome, token: token), rules)
    }

    /// A valid token whose `aud` names none of the route's audiences is refused: another
    /// route's `resource` is no audience here (RFC 8707 §2, RFC 9068 §4: the resource server
    /// checks that the token was issued for it).
    static func onRoute(_ verdict: Verdict, _ rules: RouteRules?) -> Verdict {
        guard case .valid(let token) = verdict, let rules, !rules.audiences.admits(token) else { return verdict }
        return .invalid(
            description: describe(.rejected(JOSEError(.audienceMismatch, claim: "aud", "not this route's"))),
            detail: "aud names no audience of this route (another route's resource?)")
    }

    /// What `validateNow` could not decide: introspection (RFC 7662), or the one refetch of
    /// an issuer's keys on an unknown `kid` and a second verification. Only after
    /// `validateNow` returned nil for this token: it does not look in the cache again.
    func validateLater(_ token: String, rules: RouteRules?, done: @escaping (Verdict) -> Void) {
        guard let verifier = rules?.verifier else {
            done(.invalid(description: "the token is invalid", detail: "route has no token verifier"))
            return
        }
        if !Self.hasTwoDots(token), let intro = rules?.introspection {
            introspector.introspect(token, issuer: intro.policy, config: intro.config, caFile: intro.caFile) { answer in
                switch answer {
                case .verdict(.active(let t)) where verifier.issuers.contains(where: { $0.name == t.issuer }):
                    done(Self.onRoute(.valid(t), rules))
                case .verdict(.active(let t)):
                    done(
                        .invalid(
                            description: "the token's issuer is not accepted here",
                            detail: "introspected by \(t.issuer)"))
                case .verdict(.inactive(let reason)):
                    done(.invalid(description: "the token is not active", detail: reason))
                // The AS could not say: the token may well be valid (503, not invalid_token).
                case .unavailable(let why):
                    done(.unavailable(.introspectionUnavailable, detail: "introspection: \(why)"))
                }
            }
            return
        }
        issuerKeys.verify(
            { [issuerKeys, wallClock, headerMemo] in
                verifier.verify(
                    token, now: wallClock.seconds, keys: { issuerKeys[issuer: $0] }, headerMemo: headerMemo)
            },
            unknownKey: { outcome in
                if case .failure(.unknownKey(let issuer)) = outcome { return issuer }
                return nil
            },
            done: { [weak self] outcome in
                guard let self else { return }
                done(Self.onRoute(self.verdict(outcome, token: token), rules))
            })
    }

    /// A verification's verdict; a valid token goes into the cache.
    private func verdict(_ outcome: Result<VerifiedAccessToken, AccessTokenVerifier.Failure>, token: String)
        -> Verdict
    {
        switch outcome {
        case .success(let verified):
            if cacheEnabled { cache.put(token, verified, expiresAt: verified.expiresAt, now: wallClock.seconds) }
            return .valid(verified)
        case .failure(.keysUnavailable(let issuer)):
            return .unavailable(.keysNotLoaded, detail: "no keys loaded for issuer \(issuer)")
        case .failure(let failure):
            return .invalid(description: Self.describe(failure), detail: "\(failure)")
        }
    }

    /// Whether `token` has exactly two dots, as a JWS in compact form does. Over the bytes in
    /// place, with memchr (`Span.firstIndex(of:from:)`): a lazy filter over the UTF-8 view
    /// cost about 47 instructions a byte, a plain loop 5.
    static func hasTwoDots(_ token: String) -> Bool {
        let bytes = token.utf8.span
        var dots = 0
        var at = 0
        while let hit = bytes.firstIndex(of: UInt8(ascii: "."), from: at) {
            dots += 1
            if dots > 2 { return false }
            at = hit + 1
        }
        return dots == 2
    }

    /// The wire description: what kind of problem, never which key or claim value.
    static func describe(_ f: AccessTokenVerifier.Failure) -> String {
        switch f {
        case .malformed: return "the token is malformed"
        case .unknownIssuer: return "the token's issuer is not accepted here"
        case .tenantRefused(let refusal): return refusal.description
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
}
