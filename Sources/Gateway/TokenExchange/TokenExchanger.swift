import Foundation
import OAuth
import Reactor

/// RFC 8693 token exchange toward a route's upstream, on one worker's loop (its own curl
/// multi handle): the caller's token is traded at the AS for one meant for the upstream.
/// One exchange per (subject token, target) at a time in the whole process however many
/// requests on however many workers wait on it (`ExchangedTokens`); the issued token is kept
/// until its expiry minus the route's margin, on the worker, for the process and, with a
/// Redis store, in Redis for every replica (`SharedAnswerCache`, sealed: it is a bearer
/// credential). A refusal is kept briefly, so a flood with a refused token is no flood at
/// the AS; an AS that cannot be asked, or answers with no usable token, is never cached.
/// The exchange is waited for at most the route's bound (`wait`).
final class TokenExchanger {
    /// What an exchange came to.
    enum Outcome {
        case issued(Issued)
        /// The AS refused (RFC 8693 §2.2.2): its error code. Answered 403.
        case refused(error: String)
        /// No token to send: the AS could not be asked, or its answer is unusable (the text
        /// says why, for the log). Answered 503.
        case unavailable(String)
    }

    private let loop: EventLoop
    private let wallClock: any WallClock
    let shared: SharedAnswerCache?
    /// The process's exchanges, shared by every worker.
    let process: ExchangedTokens
    private let fetchers: BackChannelFetchers
    /// Per route (its index in the config): issued tokens and refusals by subject token,
    /// and the requests waiting for an exchange under way. Keyed by the subject alone, so a
    /// request that hits builds no key and hashes only the token.
    private final class Table {
        var issued = ValidatedTokenCache<Issued>(capacity: 10_000, ttl: 86_400)
        var refused = ValidatedTokenCache<String>(capacity: 10_000, ttl: 300)
        var waiting: [String: [(Outcome) -> Void]] = [:]
    }
    private var tables: [Int: Table] = [:]
    /// Token endpoints learned from discovery metadata, by issuer name.
    var discoveredEndpoints: [String: String] = [:]
    /// The same endpoints' `mtls_endpoint_aliases` (RFC 8705 §5), for a client with a certificate.
    var discoveredMTLSEndpoints: [String: String] = [:]
    /// Exchanges asked of an AS (not answered from a cache), for metrics and tests.
    private(set) var requests = 0
    /// The key DPoP-bound exchanged tokens are bound to (`token_exchange.dpop`), as for logins
    /// with `dpop: true` and proofs sent upstream: `dpop.key_file`, or the process's.
    private(set) var proofSigner = GatewayConfig.processDPoPSigner

    /// An exchanged token with the Authorization value it goes upstream with, and until
    /// when it is handed out (its expiry less the route's margin). Kept beside the subject
    /// token's `BearerMemo` too: the connection's next request with that token goes on with
    /// this one while it is good, without looking it up by the subject token again.
    final class Issued {
        enum Key: TokenMemoKey { typealias Value = Issued }
        let token: TokenExchange.IssuedToken
        let authorization: String
        let until: Int64

        init(_ token: TokenExchange.IssuedToken, until: Int64) {
            self.token = token
            self.until = until
            authorization = (token.isDPoPBound ? "DPoP " : "Bearer ") + token.token
        }
    }

    /// An exchange this worker leads for the process: whose waiters and cache get its outcome,
    /// and by when (monotonic seconds) the AS must have answered.
    private struct Flight {
        let table: Table
        let subject: String
        let lead: ExchangedTokens.Lead
        let deadline: Double
    }

    init(
        loop: EventLoop, wallClock: any WallClock, shared: SharedAnswerCache? = nil,
        process: ExchangedTokens = ExchangedTokens()
    ) {
        self.loop = loop
        fetchers = BackChannelFetchers(loop: loop)
        self.wallClock = wallClock
        self.shared = shared
        self.process = process
    }

    /// A new config: what was exchanged under the old one is not used under the new one.
    func apply(_ config: GatewayConfig) {
        tables = [:]
        process.clear()
        proofSigner = config.dpopProofSigner
        shared?.sealer = CookieSealer(sessionKeysOf: config)
    }

    /// The exchanged token for `subjectToken` under the route's `config`; `wait`: the most the
    /// AS is waited for (the route's bound), after which the outcome is `unavailable`.
    func exchange(
        _ subjectToken: String, _ config: TokenExchangeConfig, wait: Double, done: @escaping (Outcome) -> Void
    ) {
        let now = wallClock.seconds
        let table: Table
        if let t = tables[config.route] {
            table = t
        } else {
            table = Table()
            tables[config.route] = table
        }
        if let hit = table.issued.get(subjectToken, now: now) {
            done(.issued(hit))
            return
        }
        if let error = table.refused.get(subjectToken, now: now) {
            done(.refused(error: error))
            return
        }
        if table.waiting[subjectToken] != nil {
            table.waiting[subjectToken]!.append(done)
            return
        }
        guard
            let endpoint = config.endpoint
                ?? (config.client.tls == nil ? discoveredEndpoints : discoveredMTLSEndpoints)[config.issuer]
        else {
            done(.unavailable("no token endpoint known for \(config.issuer)"))
            return
        }
        // `mode: id_jag`: an ID-JAG is asked for only when there is somewhere to take it.
        if let up = config.upstream,
            (up.client.tls == nil ? discoveredEndpoints : discoveredMTLSEndpoints)[up.issuer] == nil
        {
            done(.unavailable("no token endpoint known for \(up.issuer)"))
            return
        }
        table.waiting[subjectToken] = [done]
        let target = config.target
        // A DPoP-bound token is this process's alone (its key): replicas with other keys
        // never take it from Redis, nor a Bearer route one of its tokens.
        let boundTo = config.dpop ? proofSigner.jkt : ""
        // Across replicas, everything that makes an exchange what it is: the AS, the client
        // that asks, the target, the key, the subject. No other target gets this token.
        let sharedKey = [
            config.issuerURL, endpoint, config.client.authentication.clientID, target.resources.joined(separator: " "),
            target.audiences.joined(separator: " "), target.scope ?? "", target.requestedTokenType, boundTo,
            config.upstream.map { $0.issuerURL + " " + $0.client.authentication.clientID } ?? "", subjectToken
        ].joined(separator: "\u{0}")
        // In the process: kept by another worker, under way on one, or this worker's to ask.
        let key = Self.processKey(sharedKey, config, wait: wait)
        let role = process.join(key, loop: loop, now: now) { [weak self] outcome, until in
            guard let self else { return }
            self.finish(table, subjectToken, outcome, until: until, now: self.wallClock.seconds)
        }
        let flight: Flight
        switch role {
        case .kept(let outcome, let until):
            finish(table, subjectToken, outcome, until: until, now: now)
            return
        case .waiting:
            return
        case .leader(let lead):
            flight = Flight(
                table: table, subject: subjectToken, lead: lead, deadline: ProcessInfo.processInfo.systemUptime + wait)
        }
        let ask = { [weak self] in self?.ask(endpoint, flight, sharedKey: sharedKey, config: config) }
        guard let shared else {
            ask()
            return
        }
        shared.get(sharedKey, now: now) { [weak self] hit in
            guard let self else { return }
            let now = self.wallClock.seconds
            guard let hit,
                case .success(let token) = TokenExchange.parse(
                    status: 200, body: hit.body, target: Self.sentTarget(config),
                    boundTo: boundTo.isEmpty ? nil : boundTo,
                    now: now, grantAnswer: config.upstream != nil)
            else {
                ask()
                return
            }
            let until = min(hit.until, self.keptUntil(token, config, now: now))
            self.land(flight, .issued(Issued(token, until: until)), until: until, now: now)
        }
    }

    /// What names an exchange in the process (`ExchangedTokens`): a digest of what names it
    /// across replicas (`sharedKey`: the AS, the client, the target, the key, the subject
    /// token) and of the route's settings that shape its outcome, so routes that exchange
    /// alike share one exchange and no route gets a token kept under another's margin.
    static func processKey(_ sharedKey: String, _ config: TokenExchangeConfig, wait: Double) -> String {
        SharedAnswerCache.digest(
            sharedKey + "\u{0}\(config.margin) \(config.defaultLifetime) \(config.negativeTTL) \(wait)")
    }

    /// Asks the AS; the answer goes to the waiters and the caches.
    private func ask(_ endpoint: String, _ flight: Flight, sharedKey: String, config: TokenExchangeConfig) {
        let subjectToken = flight.subject
        let now = wallClock.seconds
        let credentials: (headers: [String], form: [(String, String)])
        do {
            let audience = config.client.assertionAudience == .endpoint ? endpoint : config.issuerURL
            credentials = try config.client.authentication.credentials(audience: audience, now: now)
        } catch {
            land(flight, .unavailable("client authentication: \(error)"), until: nil, now: now)
            return
        }
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        headers += credentials.headers
        var boundTo: String?
        if config.dpop {
            // RFC 9449 §5: a proof for this token request asks for a token bound to its key.
            guard let proof = try? proofSigner.proof(method: "POST", url: endpoint, now: now)
            else {
                land(flight, .unavailable("no DPoP proof could be made"), until: nil, now: now)
                return
            }
            headers.append("DPoP: " + proof)
            boundTo = proofSigner.jkt
        }
        requests += 1
        let form = TokenExchange.form(subjectToken: subjectToken, target: config.target) + credentials.form
        // What is left of the route's bound (a Redis look-up may have taken some).
        let left = max(0.05, flight.deadline - ProcessInfo.processInfo.systemUptime)
        let bound = CallBounds.Bound(
            connect: min(CallBounds.tokenExchange.connect, left), total: min(CallBounds.tokenExchange.total, left))
        let request = FetchRequest(
            url: endpoint, body: Array(FormEncoding.body(form).utf8), headers: headers, bound: bound,
            maxResponseBytes: 64 << 10)
        fetchers.fetcher(issuer: config.issuer, caFile: config.caFile, client: config.client).fetch(request) {
            [weak self] result in
            guard let self else { return }
            let now = self.wallClock.seconds
            let outcome: Outcome
            var until: Int64?
            switch result {
            case .success(let resp):
                switch TokenExchange.parse(
                    status: resp.status, body: resp.body, target: Self.askedTarget(config), boundTo: boundTo, now: now)
                {
                case .success(let jag) where config.upstream != nil:
                    // `mode: id_jag`: the IdP's ID-JAG, traded at the upstream's AS.
                    self.redeem(jag.token, flight, sharedKey: sharedKey, config: config)
                    return
                case .success(let token):
                    let kept = self.keptUntil(token, config, now: now)
                    until = kept
                    self.shared?.put(sharedKey, body: resp.body, until: kept, now: now)
                    outcome = .issued(Issued(token, until: kept))
                case .failure(.refused(let error, let status))
                where (400..<500).contains(status) && !Self.refusesTheGateway(error, status: status):
                    until = now + Int64(config.negativeTTL)
                    outcome = .refused(error: error)
                case .failure(.refused(let error, let status)):
                    outcome = .unavailable("token endpoint answered \(status) \(error)")
                case .failure(.unusable(let why)):
                    outcome = .unavailable("token exchange answer: \(why)")
                }
            case .failure(let e):
                outcome = .unavailable("token exchange failed: \(e.description)")
            }
            self.land(flight, outcome, until: until, now: now)
        }
    }

    /// `mode: id_jag`'s second step: the ID-JAG posted to the upstream's AS as a jwt-bearer
    /// grant (RFC 7523 §2.1; the ID-JAG draft's §4.4), with the gateway's client there; its
    /// access token is what goes upstream, kept as an exchanged token is.
    private func redeem(_ jag: String, _ flight: Flight, sharedKey: String, config: TokenExchangeConfig) {
        let now = wallClock.seconds
        guard let up = config.upstream,
            let endpoint = (up.client.tls == nil ? discoveredEndpoints : discoveredMTLSEndpoints)[up.issuer]
        else {
            return land(
                flight, .unavailable("no token endpoint known for \(config.upstream?.issuer ?? "")"), until: nil,
                now: now)
        }
        let credentials: (headers: [String], form: [(String, String)])
        do {
            let audience = up.client.assertionAudience == .endpoint ? endpoint : up.issuerURL
            credentials = try up.client.authentication.credentials(audience: audience, now: now)
        } catch {
            return land(flight, .unavailable("client authentication at \(up.issuer): \(error)"), until: nil, now: now)
        }
        var form: [(String, String)] = [("grant_type", AuthorizationServerMetadata.jwtBearer), ("assertion", jag)]
        for r in config.target.resources { form.append(("resource", r)) }
        if let scope = config.target.scope { form.append(("scope", scope)) }
        form += credentials.form
        let left = max(0.05, flight.deadline - ProcessInfo.processInfo.systemUptime)
        let bound = CallBounds.Bound(
            connect: min(CallBounds.tokenExchange.connect, left), total: min(CallBounds.tokenExchange.total, left))
        let request = FetchRequest(
            url: endpoint, body: Array(FormEncoding.body(form).utf8),
            headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
                + credentials.headers, bound: bound, maxResponseBytes: 64 << 10)
        requests += 1
        fetchers.fetcher(issuer: up.issuer, caFile: up.caFile, client: up.client).fetch(request) { [weak self] result in
            guard let self else { return }
            let now = self.wallClock.seconds
            var until: Int64?
            let outcome: Outcome
            switch result {
            case .success(let resp):
                switch TokenExchange.parse(
                    status: resp.status, body: resp.body, target: Self.sentTarget(config), now: now, grantAnswer: true)
                {
                case .success(let token):
                    let kept = self.keptUntil(token, config, now: now)
                    until = kept
                    self.shared?.put(sharedKey, body: resp.body, until: kept, now: now)
                    outcome = .issued(Issued(token, until: kept))
                // The upstream AS refusing this caller's grant (`invalid_grant`, `invalid_scope`):
                // the caller's; anything else (a target or request it does not take, its client)
                // is how the gateway is set up.
                case .failure(.refused(let error, let status))
                where (400..<500).contains(status) && ["invalid_grant", "invalid_scope"].contains(error):
                    until = now + Int64(config.negativeTTL)
                    outcome = .refused(error: error)
                case .failure(.refused(let error, let status)):
                    outcome = .unavailable("the upstream's token endpoint answered \(status) \(error)")
                case .failure(.unusable(let why)):
                    outcome = .unavailable("the upstream's token answer: \(why)")
                }
            case .failure(let e):
                outcome = .unavailable("the upstream's token endpoint failed: \(e.description)")
            }
            self.land(flight, outcome, until: until, now: now)
        }
    }

    /// What the exchange's answer must be for: with `mode: id_jag`, an ID-JAG whose `aud` is
    /// the upstream's AS (and nothing the resource alone names).
    static func askedTarget(_ config: TokenExchangeConfig) -> TokenExchange.Target {
        guard let up = config.upstream else { return config.target }
        return TokenExchange.Target(audiences: [up.issuerURL], requestedTokenType: TokenExchange.idJAGTokenType)
    }

    /// What the token sent upstream must be for: with `mode: id_jag`, the resource (a token
    /// for the upstream's AS itself is not one).
    static func sentTarget(_ config: TokenExchangeConfig) -> TokenExchange.Target {
        guard config.upstream != nil else { return config.target }
        return TokenExchange.Target(resources: config.target.resources, scope: config.target.scope)
    }

    /// The led exchange's outcome: to the process (its cache and the other workers' waiters),
    /// then to this worker's cache and waiters.
    private func land(_ flight: Flight, _ outcome: Outcome, until: Int64?, now: Int64) {
        process.finish(flight.lead, outcome, until: until, now: now)
        finish(flight.table, flight.subject, outcome, until: until, now: now)
    }

    /// Whether the AS refused the gateway rather than the caller's token: its client
    /// credentials or registration (RFC 6749 §5.2 `invalid_client`, `unauthorized_client`,
    /// `unsupported_grant_type`), or its DPoP proof (RFC 9449 §5 `invalid_dpop_proof`, §8
    /// `use_dpop_nonce`). That is the operator's to fix, not the caller's: 503.
    static func refusesTheGateway(_ error: String, status: Int) -> Bool {
        status == 401
            || [
                "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_dpop_proof",
                "use_dpop_nonce"
            ].contains(error)
    }

    /// Until when an issued token is handed out: its expiry (or the route's default
    /// lifetime when the AS gave none) less the margin, so no upstream gets one that
    /// expires in flight.
    private func keptUntil(_ token: TokenExchange.IssuedToken, _ config: TokenExchangeConfig, now: Int64) -> Int64 {
        (token.expiresAt ?? now + Int64(config.defaultLifetime)) - Int64(config.margin)
    }

    /// Caches an outcome until `until` (when it is worth keeping) and hands it to everyone
    /// waiting for `subject`. An issued token already inside its margin is still handed to
    /// the requests that waited for it (it has not expired), but not kept.
    private func finish(_ table: Table, _ subject: String, _ outcome: Outcome, until: Int64?, now: Int64) {
        if let until, until > now {
            switch outcome {
            case .issued(let issued): table.issued.put(subject, issued, expiresAt: until, now: now)
            case .refused(let error): table.refused.put(subject, error, expiresAt: until, now: now)
            case .unavailable: break
            }
        }
        let waiters = table.waiting.removeValue(forKey: subject) ?? []
        for w in waiters { w(outcome) }
    }
}
