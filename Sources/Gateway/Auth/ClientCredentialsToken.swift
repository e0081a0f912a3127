import Foundation
import OAuth
import Reactor

/// Where the gateway gets a token for itself with the client credentials grant (RFC 6749
/// §4.4): one of its `clients:` registrations, the token endpoint (its issuer's metadata
/// unless given), and the scope to ask for. A PDP's `auth: { client: NAME }`.
struct ClientCredentialsGrant: Sendable, Equatable {
    var clientName: String
    var issuer: String
    var issuerURL: String
    /// nil: the issuer's discovery metadata (`token_endpoint`).
    var endpoint: String?
    var scope: String?
    var caFile: String?
}

/// A token the gateway holds for itself, on one worker's loop: asked for when first needed,
/// kept until shortly before it expires (`expires_in` less 30 s, at least half its life),
/// asked for once however many calls wait on it, and dropped when the party it was sent to
/// refuses it (a 401: revoked, or the AS rotated its keys), so the next call asks again —
/// but not within `refusalBackoff` seconds of a refusal: a PDP that refuses every token
/// would otherwise have the AS asked once per call. Each worker holds its copy; with
/// `shared`, the process's workers ask once between them (`ProcessGrantTokens`).
final class ClientCredentialsToken {
    let grant: ClientCredentialsGrant
    private let client: ClientConfig
    private let fetcher: HTTPFetcher
    private let loop: EventLoop
    /// The process's held tokens and the key this grant is held under there; nil: this
    /// worker's alone.
    private let shared: (tokens: ProcessGrantTokens, key: String)?
    private var held: (token: String, until: Double)?
    private var waiting: [(Result<String, ClientCredentialsError>) -> Void] = []
    /// The issuer's token endpoint as its metadata says (set as metadata arrives).
    private var discoveredEndpoint: String?
    /// Token requests made (not answered from the held token), for tests and the log.
    private(set) var requests = 0
    /// Until when (uptime seconds) no token is asked for, after one was refused.
    private var refusedUntil: Double?
    static let refusalBackoff = 5.0
    /// The lifetime taken when `expires_in` is missing, not a number or not positive
    /// (RFC 6749 §5.1 only recommends it): short, yet not a token request per call.
    static let defaultLifetime: Int64 = 60
    /// The most `expires_in` is believed: a token is asked for again at least daily.
    static let maxLifetime: Int64 = 86_400

    init(
        grant: ClientCredentialsGrant, client: ClientConfig, fetchers: BackChannelFetchers,
        shared: ProcessGrantTokens? = nil
    ) {
        self.grant = grant
        self.client = client
        loop = fetchers.loop
        fetcher = fetchers.fetcher(issuer: grant.issuer, caFile: grant.caFile, client: client)
        self.shared = shared.map { ($0, Self.key(grant, client)) }
    }

    /// What names the grant among the process's tokens: the AS, the client that asks and how
    /// it authenticates, and the scope. Two upstreams with the same grant share one token.
    static func key(_ grant: ClientCredentialsGrant, _ client: ClientConfig) -> String {
        [
            grant.issuer, grant.endpoint ?? "", grant.scope ?? "", grant.clientName,
            client.authentication.clientID
        ].joined(separator: "\u{0}")
    }

    /// The token this worker holds, while it may be used: a request that finds one goes on
    /// at once.
    var current: String? {
        guard let held, usable(held, now: ProcessInfo.processInfo.systemUptime) else { return nil }
        return held.token
    }

    /// Whether this worker's copy may go: before its time is up, and, when the process shares
    /// it, while the process still holds it (another worker may have seen it refused).
    private func usable(_ held: (token: String, until: Double), now: Double) -> Bool {
        guard now < held.until else { return false }
        guard let shared else { return true }
        return shared.tokens.holds(shared.key, token: held.token)
    }

    /// The issuer's metadata: its token endpoint, or for a client with a certificate the
    /// endpoint's `mtls_endpoint_aliases` entry (RFC 8705 §5).
    func discovered(_ endpoints: (plain: String?, mtls: String?)) {
        discoveredEndpoint = client.tls == nil ? endpoints.plain : endpoints.mtls
    }

    /// The token, held or asked for now; `timeout` bounds the ask. `done` runs on this loop.
    func get(timeout: Double, done: @escaping (Result<String, ClientCredentialsError>) -> Void) {
        let now = ProcessInfo.processInfo.systemUptime
        if let held, usable(held, now: now) { return done(.success(held.token)) }
        held = nil
        if let until = refusedUntil, now < until {
            return done(.failure(.init("the last token was refused; none asked for until the backoff ends")))
        }
        waiting.append(done)
        guard waiting.count == 1 else { return }
        guard let shared else { return ask(timeout: timeout, lead: nil) }
        // Held strongly: requests wait on this source, and a reload may let go of it before
        // the worker that asks for the process answers.
        let role = shared.tokens.join(shared.key, loop: loop, now: now) { outcome, until in
            self.landShared(outcome, until: until)
        }
        switch role {
        case .held(let token, let until): landShared(.success(token), until: until)
        case .waiting: return
        case .leader(let lead): ask(timeout: timeout, lead: lead)
        }
    }

    /// Another worker's outcome (or the process's held token): held here too, until the same time.
    private func landShared(_ outcome: ProcessGrantTokens.Outcome, until: Double) {
        if case .success(let token) = outcome { held = (token, until) }
        land(outcome)
    }

    /// The token was refused where it was sent: never sent again, and no new one asked for
    /// within `refusalBackoff`.
    func drop(_ token: String) {
        guard held?.token == token else { return }
        held = nil
        if let shared { shared.tokens.drop(shared.key, token: token) }
        refusedUntil = ProcessInfo.processInfo.systemUptime + Self.refusalBackoff
    }

    /// Until when (uptime seconds) a token a resource server called invalid is not replaced again.
    private var replacedUntil = 0.0

    /// A resource server answered the token with `invalid_token` (RFC 6750 §3.1): it may have
    /// been revoked, or the AS's keys rotated. The next request asks for a new one, at most
    /// once per `refusalBackoff`: a server that refuses every token (or a client that can make
    /// it say so) costs the AS one request in 5 s, and requests meanwhile carry the one held.
    func replace(_ token: String) {
        let now = ProcessInfo.processInfo.systemUptime
        guard held?.token == token, now >= replacedUntil else { return }
        replacedUntil = now + Self.refusalBackoff
        held = nil
        if let shared { shared.tokens.drop(shared.key, token: token) }
    }

    /// How long a token is held (seconds): `expires_in` less 30 s, at least half of it, with
    /// `expires_in` clamped to `defaultLifetime` (missing, not positive) … `maxLifetime`.
    static func heldFor(expiresIn: Int64?) -> Double {
        let given = expiresIn ?? 0
        let life = Double(given <= 0 ? defaultLifetime : min(given, maxLifetime))
        return max(life / 2, life - 30)
    }

    /// Asks the AS; `lead`: this worker asks for the process, whose other workers wait on it.
    private func ask(timeout: Double, lead: ProcessGrantTokens.Lead?) {
        let land = { [self] (outcome: ProcessGrantTokens.Outcome) in
            if let lead, let shared { shared.tokens.finish(lead, outcome, until: held?.until ?? 0) }
            self.land(outcome)
        }
        guard let endpoint = grant.endpoint ?? discoveredEndpoint else {
            return land(.failure(.init("no token endpoint known for \(grant.issuer) (its metadata not read yet)")))
        }
        let credentials: (headers: [String], form: [(String, String)])
        do {
            let audience = client.assertionAudience == .endpoint ? endpoint : grant.issuerURL
            credentials = try client.authentication.credentials(
                audience: audience, now: Int64(Date().timeIntervalSince1970))
        } catch {
            return land(.failure(.init("client authentication: \(error)")))
        }
        var form = [("grant_type", "client_credentials")]
        if let scope = grant.scope { form.append(("scope", scope)) }
        form += credentials.form
        let request = FetchRequest(
            url: endpoint, body: Array(FormEncoding.body(form).utf8),
            headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
                + credentials.headers,
            timeout: timeout, connectTimeout: timeout, maxResponseBytes: 64 << 10)
        requests += 1
        fetcher.fetch(request) { [self] result in
            switch result {
            case .failure(let e):
                land(.failure(.init("token endpoint: \(e.description)")))
            case .success(let resp):
                // An answer that gives no usable token (the AS refuses the gateway's client,
                // or says something no token is) is asked again only after `refusalBackoff`,
                // as after a refused token: otherwise every request would cost a token request.
                switch TokenResponse.parse(status: resp.status, body: resp.body) {
                case .failure(let f):
                    refusedUntil = ProcessInfo.processInfo.systemUptime + Self.refusalBackoff
                    land(.failure(.init("token endpoint answered \(f.status) \(f.error)")))
                case .success(let t) where !t.hasType(dpop: false):
                    refusedUntil = ProcessInfo.processInfo.systemUptime + Self.refusalBackoff
                    land(.failure(.init("token endpoint answered token_type \(t.tokenType), not Bearer")))
                case .success(let t):
                    let now = ProcessInfo.processInfo.systemUptime
                    held = (t.accessToken, now + Self.heldFor(expiresIn: t.expiresIn))
                    land(.success(t.accessToken))
                }
            }
        }
    }

    private func land(_ result: Result<String, ClientCredentialsError>) {
        let all = waiting
        waiting = []
        for done in all { done(result) }
    }
}

/// Why no token could be had: for the log, never for the caller.
struct ClientCredentialsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
