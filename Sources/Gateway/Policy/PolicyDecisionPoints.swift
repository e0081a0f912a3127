import Foundation
import JOSE
import OAuth
import Reactor

/// One worker's side of the `authorizers`: an HTTP client per PDP on the worker's loop, the
/// endpoints its metadata names, and the process's decision cache in front of them. Every
/// call is bounded by the authorizer's `timeout`; redirects are not followed (the calls may
/// carry a credential). Loop-thread only.
final class PolicyDecisionPoints {
    private let loop: EventLoop
    let cache: PolicyDecisionCache
    private var clients: [String: PDPClient] = [:]
    private let wallClock: any WallClock
    private let fetchers: BackChannelFetchers
    /// Token endpoints from issuers' metadata, by issuer name (for `auth: { client }`): the
    /// plain one, and the one for clients with a certificate (RFC 8705 §5 aliases).
    private var tokenEndpoints: [String: (plain: String?, mtls: String?)] = [:]
    private(set) var metrics = AuthorizationMetrics()

    /// The clock the decision cache keeps time by.
    var now: Double { wallClock.now }

    func record(_ authorizer: String, outcome: AuthorizationNote.Outcome, cached: Bool, micros: Int) {
        metrics.record(authorizer, outcome: outcome, cached: cached, micros: micros)
    }

    /// The process's client-credentials tokens, which the PDPs' tokens are asked for through.
    private let grantTokens: ProcessGrantTokens?

    init(
        loop: EventLoop, cache: PolicyDecisionCache, wallClock: any WallClock, grantTokens: ProcessGrantTokens? = nil
    ) {
        self.loop = loop
        self.grantTokens = grantTokens
        self.cache = cache
        self.wallClock = wallClock
        fetchers = BackChannelFetchers(loop: loop)
    }

    /// An issuer's metadata arrived: its token endpoint, for the PDPs' client credentials.
    func discovered(issuer: String, tokenEndpoint: String?, mtls: String?) {
        tokenEndpoints[issuer] = (tokenEndpoint, mtls)
        for client in clients.values where client.tokenSource?.grant.issuer == issuer {
            client.tokenSource?.discovered(tokenEndpoints[issuer]!)
        }
    }

    /// A new config: a client for each authorizer (kept when its settings did not change),
    /// each reading its PDP's metadata again; decisions made under the old config are dropped.
    func apply(_ config: GatewayConfig) {
        var next: [String: PDPClient] = [:]
        for (name, a) in config.authorizers {
            var tokenSource: ClientCredentialsToken?
            if case .client(let grant) = a.auth, let registration = config.clients[grant.clientName] {
                tokenSource = ClientCredentialsToken(
                    grant: grant, client: registration, fetchers: fetchers, shared: grantTokens)
                if let known = tokenEndpoints[grant.issuer] { tokenSource?.discovered(known) }
            }
            // Kept when nothing changed; a client's registration (its secret, its key) may have
            // changed under the same name, so a PDP reached with one is always made anew.
            let client =
                clients[name].flatMap { $0.config == a && tokenSource == nil ? $0 : nil }
                ?? PDPClient(loop: loop, config: a, tokenSource: tokenSource)
            client.discover()
            next[name] = client
        }
        clients = next
        cache.clear()
    }

    /// Each PDP as the status page shows it: its endpoint, whether its metadata was read,
    /// and this worker's counts of its decisions.
    var status: AuthorizerStatuses {
        var out = AuthorizerStatuses()
        for (name, client) in clients {
            out.byName[name] = AuthorizerStatus(
                endpoint: client.evaluationURL, metadata: client.metadataRead,
                counts: metrics.byAuthorizer[name] ?? AuthorizationMetrics.Counts())
        }
        return out
    }

    /// The decision on `evaluation`: kept, or asked of the PDP (once, however many ask it
    /// at a time in the process). `done` runs on this loop, at once for a kept decision; its
    /// `keptUntil` is set for a decision answered from the cache: until when it stands.
    func evaluate(
        _ authorizer: AuthorizerConfig, _ evaluation: AuthZENEvaluation, requestID: String,
        done: @escaping (Result<AuthZENDecision, AuthZENError>, _ keptUntil: Double?) -> Void
    ) {
        let key = evaluation.key
        let now = wallClock.now
        switch cache.join(key, loop: loop, now: now, done: { done($0, nil) }) {
        case .hit(let d, let until): done(.success(d), until)
        case .waiting: break
        case .leader:
            guard let client = clients[authorizer.name] else {
                let result = Result<AuthZENDecision, AuthZENError>.failure(.unreachable("no client (config changing)"))
                cache.finish(key, result, cache: authorizer.cache, now: now)
                return done(result, nil)
            }
            var asked = evaluation
            asked.time = now
            client.post(client.evaluationURL, body: asked.body, requestID: requestID) { [cache, wallClock] r in
                let result = r.flatMap { AuthZENDecision.parse(status: $0.status, body: $0.body) }
                cache.finish(key, result, cache: authorizer.cache, now: wallClock.now)
                done(result, nil)
            }
        }
    }

    /// Decisions on one subject and action for several resources, in one call
    /// (`access/v1/evaluations`, §7), not cached: an MCP `tools/list` filtered by the PDP.
    func evaluateAll(
        _ authorizer: AuthorizerConfig, _ first: AuthZENEvaluation, resources: [JSONObject], requestID: String,
        done: @escaping (Result<[AuthZENDecision], AuthZENError>) -> Void
    ) {
        guard let client = clients[authorizer.name] else { return done(.failure(.unreachable("no client"))) }
        var asked = first
        asked.time = wallClock.now
        let body = AuthZENEvaluation.batchBody(asked, resources: resources)
        client.post(client.evaluationsURL, body: body, requestID: requestID) { r in
            done(r.flatMap { AuthZENDecision.parseBatch(status: $0.status, body: $0.body, count: resources.count) })
        }
    }
}

/// One PDP's HTTP client on one loop.
final class PDPClient {
    let config: AuthorizerConfig
    private let fetcher: HTTPFetcher
    private(set) var evaluationURL: String
    private(set) var evaluationsURL: String
    /// nil: the metadata was not asked for yet or not answered; false: the PDP has none
    /// (or an unusable one), and the endpoints are the defaults below `url`.
    private(set) var metadataRead: Bool?
    private var token: (text: String, readAt: Double)?
    /// `auth: { client }`: the gateway's own token for the PDP.
    let tokenSource: ClientCredentialsToken?

    init(loop: EventLoop, config: AuthorizerConfig, tokenSource: ClientCredentialsToken? = nil) {
        self.config = config
        self.tokenSource = tokenSource
        var settings = FetchSettings(caFile: config.caFile)
        settings.maxRedirects = 0
        fetcher = HTTPFetcher(loop: loop, settings: settings)
        evaluationURL = config.evaluationURL
        evaluationsURL = config.evaluationsURL
    }

    /// Reads the PDP's metadata (AuthZEN §9): its endpoints, when it names them under the
    /// same origin's scheme. Until it answers, and when it has none, the defaults are used;
    /// no request waits for it. Each reading stands alone: metadata refused or unusable now
    /// puts the defaults back, never an endpoint an earlier reading named.
    func discover() {
        let request = FetchRequest(
            url: config.metadataURL, headers: ["Accept: application/json"], timeout: 5, connectTimeout: 2,
            maxResponseBytes: 64 << 10)
        fetcher.fetch(request) { [weak self] result in
            guard let self else { return }
            evaluationURL = config.evaluationURL
            evaluationsURL = config.evaluationsURL
            guard case .success(let resp) = result, resp.status == 200,
                let meta = (try? JSONParser.parse(resp.body))?.object
            else {
                metadataRead = false
                return
            }
            let one = meta["access_evaluation_endpoint"]?.string
            let many = meta["access_evaluations_endpoint"]?.string
            func usable(_ s: String?) -> Bool { Self.sameOrigin(s, as: config.url) }
            if usable(one) { evaluationURL = one! }
            if usable(many) { evaluationsURL = many! }
            metadataRead = usable(one) || usable(many)
        }
    }

    /// Whether a metadata endpoint has `url`'s scheme, host and port: only those calls may
    /// carry the gateway's credential, which metadata naming another origin would send there.
    static func sameOrigin(_ endpoint: String?, as url: String) -> Bool {
        guard let endpoint, let u = URL(string: endpoint), let base = URL(string: url) else { return false }
        return u.scheme == base.scheme && u.host?.isEmpty == false && u.host == base.host && u.port == base.port
    }

    /// POSTs a JSON body with the request's id (AuthZEN §10.1.3: the PDP echoes it) and the
    /// gateway's credential, bounded by the authorizer's timeout.
    func post(
        _ url: String, body: [UInt8], requestID: String,
        done: @escaping (Result<FetchResponse, AuthZENError>) -> Void
    ) {
        var headers = ["Content-Type: application/json", "Accept: application/json", "X-Request-ID: \(requestID)"]
        if case .bearerFile(let path) = config.auth {
            guard let t = bearer(path) else { return done(.failure(.unreachable("cannot read \(path)"))) }
            headers.append("Authorization: Bearer \(t)")
        }
        if let tokenSource {
            // The token and the call share the authorizer's bound: a slow AS is the PDP's error.
            let start = ProcessInfo.processInfo.systemUptime
            tokenSource.get(timeout: config.timeout) { [self] result in
                switch result {
                case .failure(let e):
                    done(.failure(.unreachable("no token for the PDP: \(e)")))
                case .success(let token):
                    let left = max(0.05, config.timeout - (ProcessInfo.processInfo.systemUptime - start))
                    send(url, body: body, headers: headers + ["Authorization: Bearer \(token)"], timeout: left) {
                        result in
                        // RFC 6750 §3.1: a refused token (revoked, expired early) is not sent again.
                        if case .success(let resp) = result, resp.status == 401 { tokenSource.drop(token) }
                        done(result)
                    }
                }
            }
            return
        }
        send(url, body: body, headers: headers, timeout: config.timeout, done: done)
    }

    private func send(
        _ url: String, body: [UInt8], headers: [String], timeout: Double,
        done: @escaping (Result<FetchResponse, AuthZENError>) -> Void
    ) {
        let request = FetchRequest(
            url: url, body: body, headers: headers, timeout: timeout, connectTimeout: timeout,
            maxResponseBytes: 256 << 10)
        // The completion holds this client (and so its fetcher) until the call ends: a reload
        // that drops the client must not drop a call that requests, here and on other workers
        // (PolicyDecisionCache), wait for. The timeout bounds the hold.
        fetcher.fetch(request) { [self] result in
            _ = self
            switch result {
            case .success(let resp): done(.success(resp))
            case .failure(let e): done(.failure(.unreachable(e.description)))
            }
        }
    }

    /// The file's token, read again at most once a second (a rotated file is used within a
    /// second of its change). RFC 6750 §2.1's b64token, checked by bytes: a file with any
    /// other byte inside (a CR/LF would split the call in two) gives no token.
    private func bearer(_ path: String) -> String? {
        let now = ProcessInfo.processInfo.systemUptime
        if let token, now - token.readAt < 1 { return token.text }
        guard let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            BearerTokenExtractor.isB64Token(text)
        else { return nil }
        token = (text, now)
        return text
    }
}

/// Authorization counters of one worker (and, added up, of the process), by authorizer:
/// decisions by outcome, those answered from the cache, and the time requests waited.
struct AuthorizationMetrics: Sendable {
    struct Counts: Sendable {
        var allow = 0, deny = 0, error = 0, cached = 0
        var waitSeconds = 0.0

        mutating func add(_ o: Counts) {
            allow += o.allow
            deny += o.deny
            error += o.error
            cached += o.cached
            waitSeconds += o.waitSeconds
        }
    }

    var byAuthorizer: [String: Counts] = [:]

    mutating func add(_ o: AuthorizationMetrics) {
        for (name, counts) in o.byAuthorizer { byAuthorizer[name, default: Counts()].add(counts) }
    }

    mutating func record(_ authorizer: String, outcome: AuthorizationNote.Outcome, cached hit: Bool, micros: Int) {
        byAuthorizer[authorizer, default: Counts()].record(outcome, cached: hit, micros: micros)
    }

    func write(to out: inout PrometheusText) {
        let sorted = byAuthorizer.sorted { $0.key < $1.key }
        out.family(
            "tokengate_authz_decisions_total", .counter,
            help: "Policy decisions by authorizer and outcome (allow, deny, error).")
        for (name, c) in sorted {
            for (outcome, n) in [("allow", c.allow), ("deny", c.deny), ("error", c.error)] where n > 0 {
                out.sample("tokengate_authz_decisions_total", [("authorizer", name), ("outcome", outcome)], n)
            }
        }
        out.family(
            "tokengate_authz_cache_hits_total", .counter, help: "Policy decisions answered from the process's cache.")
        for (name, c) in sorted { out.sample("tokengate_authz_cache_hits_total", [("authorizer", name)], c.cached) }
        out.family(
            "tokengate_authz_wait_seconds_total", .counter, help: "Seconds requests waited for policy decisions.")
        for (name, c) in sorted {
            out.sample("tokengate_authz_wait_seconds_total", [("authorizer", name)], c.waitSeconds)
        }
    }
}

extension AuthorizationMetrics.Counts {
    mutating func record(_ outcome: AuthorizationNote.Outcome, cached hit: Bool, micros: Int) {
        switch outcome {
        case .allow: allow += 1
        case .deny: deny += 1
        case .error: error += 1
        }
        if hit { cached += 1 }
        waitSeconds += Double(micros) / 1e6
    }
}
