import Foundation
import JOSE
import OAuth
import Reactor

/// RFC 7662 token introspection for opaque tokens, on one worker's loop (its own curl multi
/// handle): one request per token at a time however many requests wait on it, answers
/// cached — positive until min(exp, cache_ttl), negative for negative_ttl — on the worker and,
/// with a Redis store, in Redis for every replica (`SharedAnswerCache`).
final class Introspector {
    private let loop: EventLoop
    /// "Now" for the answers' expiry (`exp`, cache_ttl, negative_ttl).
    private let wallClock: any WallClock
    let shared: SharedAnswerCache?
    private let fetchers: BackChannelFetchers
    private var positive = ValidatedTokenCache<VerifiedAccessToken>(capacity: 10_000, ttl: 300)
    private var negative = ValidatedTokenCache<String>(capacity: 10_000, ttl: 60)
    private var waiting: [String: [(Answer) -> Void]] = [:]
    /// Endpoints learned from discovery metadata, by issuer name.
    var discoveredEndpoints: [String: String] = [:]
    /// The same endpoints' `mtls_endpoint_aliases` (RFC 8705 §5), for a client with a certificate.
    var discoveredMTLSEndpoints: [String: String] = [:]
    /// The issuers' current keys: what signed answers (RFC 9701) are verified with; an answer
    /// signed with a key not yet held gets one refetch, as a token would.
    var keys: IssuerKeyResolver?
    private(set) var requests = 0

    /// The worker's copy of the Shared Signals revocations (set once the worker has one).
    var revocations: RevocationSnapshot?

    /// Whether a kept answer predates a revocation of its subject (a disabled account's is
    /// refused whatever is asked, so it is not asked again). An answer given in the event's own
    /// second counts as after it: the answer asked for again lands in that second, and asking
    /// on every request of it would hammer the AS.
    private func answeredBeforeRevocation(_ t: VerifiedAccessToken, issuer: String, now: Int64) -> Bool {
        guard let revocations, revocations.standing else { return false }
        let revoked = revocations.check(
            t.claims, issuer: issuer, issuedAt: t.vouchedAt.map { $0 + 1 } ?? Int64.min, now: now)
        return revoked != nil && revoked != .disabled
    }

    init(loop: EventLoop, wallClock: any WallClock, shared: SharedAnswerCache? = nil) {
        self.loop = loop
        fetchers = BackChannelFetchers(loop: loop)
        self.wallClock = wallClock
        self.shared = shared
    }

    func reset() {
        positive = ValidatedTokenCache(capacity: 10_000, ttl: 300)
        negative = ValidatedTokenCache(capacity: 10_000, ttl: 60)
    }

    /// The AS's verdict on a token, or no answer about it (the AS could not be asked, or
    /// failed): that is not "inactive" — the caller answers 503, and nothing is cached.
    enum Answer {
        case verdict(IntrospectionResponse.Verdict)
        case unavailable(String)
    }

    func introspect(
        _ token: String, issuer: IssuerPolicy, config: IntrospectionConfig, caFile: String?,
        done: @escaping (Answer) -> Void
    ) {
        let now = wallClock.seconds
        // One issuer's answer is never another's: an opaque token that issuer A vouches for
        // means nothing on a route that trusts only B.
        let key = issuer.name + "\u{0}" + token
        // An answer given before a Shared Signals event about its subject is asked again: the
        // AS's word now (its claims, whether the token is still good) decides.
        if let hit = positive.get(key, now: now), !answeredBeforeRevocation(hit, issuer: issuer.name, now: now) {
            done(.verdict(.active(hit)))
            return
        }
        if let reason = negative.get(key, now: now) {
            done(.verdict(.inactive(reason: reason)))
            return
        }
        if waiting[key] != nil {
            waiting[key]!.append(done)
            return
        }
        guard
            let endpoint = config.endpoint
                ?? (config.client.tls == nil ? discoveredEndpoints : discoveredMTLSEndpoints)[issuer.name]
        else {
            done(.unavailable("no introspection endpoint known for \(issuer.name)"))
            return
        }
        let credentials: (headers: [String], form: [(String, String)])
        do {
            let audience = config.client.assertionAudience == .endpoint ? endpoint : issuer.issuer
            credentials = try config.client.authentication.credentials(audience: audience, now: now)
        } catch {
            done(.unavailable("client authentication: \(error)"))
            return
        }
        waiting[key] = [done]
        // Across replicas, the answer is named by the AS that gave it (its issuer and
        // endpoint), not by this config's name for it: replicas with other names, or a
        // reload that points a name elsewhere, never take one AS's answer for another's.
        // A signed answer is kept as the JSON it carried, once verified: never shared with
        // replicas that would take an unsigned one under the same name.
        let sharedKey = (config.signed ? "signed\u{0}" : "") + issuer.issuer + "\u{0}" + endpoint + "\u{0}" + token
        let ask = { [weak self] in
            self?.ask(
                endpoint, token: token, key: key, sharedKey: sharedKey, issuer: issuer, config: config,
                credentials: credentials, caFile: caFile)
        }
        guard let shared else {
            ask()
            return
        }
        shared.get(sharedKey, now: now) { [weak self] hit in
            guard let self else { return }
            guard let hit else {
                ask()
                return
            }
            let now = self.wallClock.seconds
            var verdict = IntrospectionResponse.judge(
                hit.body, issuer: issuer, now: now, defaultTTL: Int64(config.cacheTTL))
            if case .active(var t) = verdict {
                t.vouchedAt = hit.at
                guard !self.answeredBeforeRevocation(t, issuer: issuer.name, now: now) else {
                    ask()
                    return
                }
                verdict = .active(t)
            }
            // Kept no longer than this replica's own TTLs would keep it either.
            let own: Int64
            if case .active = verdict { own = Int64(config.cacheTTL) } else { own = Int64(config.negativeTTL) }
            self.finish(key, .verdict(verdict), until: min(hit.until, now + own), now: now)
        }
    }

    /// Asks the AS; the answer goes to the waiters and the caches.
    private func ask(
        _ endpoint: String, token: String, key: String, sharedKey: String, issuer: IssuerPolicy,
        config: IntrospectionConfig,
        credentials: (headers: [String], form: [(String, String)]), caFile: String?
    ) {
        requests += 1
        let body = FormEncoding.body([("token", token), ("token_type_hint", "access_token")] + credentials.form)
        let accept = config.signed ? SignedIntrospectionResponse.mediaType : "application/json"
        let request = FetchRequest(
            url: endpoint, body: Array(body.utf8),
            headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: \(accept)"] + credentials.headers,
            bound: CallBounds.introspection, maxResponseBytes: 64 << 10)
        fetchers.fetcher(issuer: issuer.name, caFile: caFile, client: config.client).fetch(request) {
            [weak self] result in
            guard let self else { return }
            guard case .success(let resp) = result, resp.status == 200, config.signed else {
                self.conclude(result, answer: (try? result.get())?.body ?? [], key, sharedKey, issuer, config)
                return
            }
            self.unwrapSigned(resp.body, issuer: issuer, config: config) { unwrapped in
                switch unwrapped {
                case .success(let inner): self.conclude(result, answer: inner, key, sharedKey, issuer, config)
                case .failure(let refused):
                    self.finish(key, .unavailable(refused.reason), until: nil, now: self.wallClock.seconds)
                }
            }
        }
    }

    /// The verdict of an answer (the RFC 7662 JSON), to the waiters and the caches.
    private func conclude(
        _ result: Result<FetchResponse, FetchError>, answer: [UInt8], _ key: String, _ sharedKey: String,
        _ issuer: IssuerPolicy, _ config: IntrospectionConfig
    ) {
        let now = wallClock.seconds
        switch result {
        case .success(let resp) where resp.status == 200 && IntrospectionResponse.isResponse(answer):
            var verdict = IntrospectionResponse.judge(
                answer, issuer: issuer, now: now, defaultTTL: Int64(config.cacheTTL))
            if case .active(var t) = verdict {
                t.vouchedAt = now
                verdict = .active(t)
            }
            let until: Int64
            switch verdict {
            case .active(let t): until = min(t.expiresAt, now + Int64(config.cacheTTL))
            case .inactive: until = now + Int64(config.negativeTTL)
            }
            shared?.put(sharedKey, body: answer, until: until, now: now)
            finish(key, .verdict(verdict), until: until, now: now)
        case .success(let resp):
            // An AS error, or a 200 that is no introspection response, is not an answer
            // about the token: nothing is cached.
            let what = resp.status == 200 ? "200 without a JSON object with active" : "\(resp.status)"
            finish(key, .unavailable("introspection endpoint answered \(what)"), until: nil, now: now)
        case .failure(let e):
            finish(key, .unavailable("introspection failed: \(e.description)"), until: nil, now: now)
        }
    }

    /// The RFC 7662 JSON of a signed answer (RFC 9701), or why it is no answer: signed by the
    /// issuer's keys, for this gateway's client. A forged or misaddressed answer says nothing
    /// about the token, so it is the endpoint failing (503), never cached. A `kid` not held yet
    /// (the AS has just rotated) gets one refetch of the issuer's keys first.
    private func unwrapSigned(
        _ body: [UInt8], issuer: IssuerPolicy, config: IntrospectionConfig,
        done: @escaping (Result<[UInt8], SignedAnswerRefused>) -> Void
    ) {
        guard let keys else {
            done(.failure(SignedAnswerRefused(reason: "no keys of \(issuer.name) to verify the answer", code: nil)))
            return
        }
        keys.verify(
            { [wallClock] () -> Result<[UInt8], SignedAnswerRefused> in
                guard let set = keys[issuer: issuer.name] else {
                    return .failure(
                        SignedAnswerRefused(reason: "no keys of \(issuer.name) to verify the answer", code: nil))
                }
                return SignedIntrospectionResponse.unwrap(
                    body, issuer: issuer.issuer, audience: config.client.authentication.clientID, keys: set,
                    algorithms: issuer.algorithms, leeway: issuer.leeway, now: wallClock.seconds
                ).mapError { SignedAnswerRefused(reason: "signed introspection answer refused: \($0)", code: $0.code) }
            },
            unknownKey: { outcome in
                if case .failure(let refused) = outcome, refused.code == .keyNotFound { return issuer.name }
                return nil
            },
            done: done)
    }

    struct SignedAnswerRefused: Error {
        let reason: String
        let code: JOSEError.Code?
    }

    /// Caches a verdict on this worker until `until` and hands the answer to everyone waiting
    /// for `key`.
    private func finish(_ key: String, _ answer: Answer, until: Int64?, now: Int64) {
        if let until, case .verdict(let verdict) = answer {
            switch verdict {
            case .active(let t): positive.put(key, t, expiresAt: min(t.expiresAt, until), now: now)
            case .inactive(let reason): negative.put(key, reason, expiresAt: until, now: now)
            }
        }
        let waiters = waiting.removeValue(forKey: key) ?? []
        for w in waiters { w(answer) }
    }
}
