import Foundation
import OAuth
import Reactor

/// RFC 7662 token introspection for opaque tokens, on one worker's loop (its own curl multi
/// handle): one request per token at a time however many requests wait on it, answers
/// cached — positive until min(exp, cache_ttl), negative for negative_ttl.
final class Introspector {
    private let loop: EventLoop
    private var fetchers: [String: HTTPFetcher] = [:]
    private var positive = ValidatedTokenCache<VerifiedAccessToken>(capacity: 10_000, ttl: 300)
    private var negative = ValidatedTokenCache<String>(capacity: 10_000, ttl: 60)
    private var waiting: [String: [(IntrospectionResponse.Verdict) -> Void]] = [:]
    /// Endpoints learned from discovery metadata, by issuer name.
    var discoveredEndpoints: [String: String] = [:]
    private(set) var requests = 0

    init(loop: EventLoop) { self.loop = loop }

    func reset() {
        positive = ValidatedTokenCache(capacity: 10_000, ttl: 300)
        negative = ValidatedTokenCache(capacity: 10_000, ttl: 60)
    }

    func introspect(_ token: String, issuer: IssuerPolicy, config: IntrospectionConfig, caFile: String?,
                    done: @escaping (IntrospectionResponse.Verdict) -> Void) {
        let now = Int64(Date().timeIntervalSince1970)
        // One issuer's answer is never another's: an opaque token that issuer A vouches for
        // means nothing on a route that trusts only B.
        let key = issuer.name + "\u{0}" + token
        if let hit = positive.get(key, now: now) { done(.active(hit)); return }
        if let reason = negative.get(key, now: now) { done(.inactive(reason: reason)); return }
        if waiting[key] != nil { waiting[key]!.append(done); return }
        guard let endpoint = config.endpoint ?? discoveredEndpoints[issuer.name] else {
            done(.inactive(reason: "no introspection endpoint known for \(issuer.name)")); return
        }
        let credentials: (headers: [String], form: [(String, String)])
        do {
            let audience = config.client.assertionAudience == .endpoint ? endpoint : issuer.issuer
            credentials = try config.client.authentication.credentials(audience: audience, now: now)
        } catch {
            done(.inactive(reason: "client authentication: \(error)")); return
        }
        waiting[key] = [done]
        requests += 1
        let body = FormEncoding.body([("token", token), ("token_type_hint", "access_token")] + credentials.form)
        let request = FetchRequest(url: endpoint, body: Array(body.utf8),
                                   headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"] + credentials.headers,
                                   timeout: 5, connectTimeout: 2, maxResponseBytes: 64 << 10)
        fetcher(issuer.name, caFile: caFile).fetch(request) { [weak self] result in
            guard let self else { return }
            let now = Int64(Date().timeIntervalSince1970)
            let verdict: IntrospectionResponse.Verdict
            switch result {
            case .success(let resp) where resp.status == 200:
                verdict = IntrospectionResponse.judge(resp.body, issuer: issuer, now: now, defaultTTL: Int64(config.cacheTTL))
                switch verdict {
                case .active(let t): self.positive.put(key, t, expiresAt: min(t.expiresAt, now + Int64(config.cacheTTL)), now: now)
                case .inactive(let reason): self.negative.put(key, reason, expiresAt: now + Int64(config.negativeTTL), now: now)
                }
            case .success(let resp):
                // An AS error is not an answer about the token: nothing is cached.
                verdict = .inactive(reason: "introspection endpoint answered \(resp.status)")
            case .failure(let e):
                verdict = .inactive(reason: "introspection failed: \(e.description)")
            }
            let waiters = self.waiting.removeValue(forKey: key) ?? []
            for w in waiters { w(verdict) }
        }
    }

    private func fetcher(_ issuer: String, caFile: String?) -> HTTPFetcher {
        if let f = fetchers[issuer] { return f }
        let f = HTTPFetcher(loop: loop, settings: FetchSettings(caFile: caFile))
        fetchers[issuer] = f
        return f
    }
}
