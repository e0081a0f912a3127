import Foundation
import JOSE
import OAuth
import Reactor

/// Client ID Metadata Documents as the AS fetches them (draft-ietf-oauth-client-id-metadata-
/// document §5, §8.6, §8.7), on a worker's loop: only for a host `allowed_client_hosts`
/// admits; https to a public address, judged on the address connected to (a loopback one
/// only for a loopback host listed exactly, with the issuer itself on loopback); no redirect;
/// 5 KB and 3 s at most; cached by the document's `Cache-Control: max-age` between 1 minute
/// and 24 hours (5 minutes when it says none); concurrent asks for one URL share one fetch. A
/// client's `jwks_uri` is fetched the same way. A refusal is not cached (§5.2: an invalid
/// document must not be), but a failing URL is asked again at most every 10 s. At most
/// `maxInFlight` fetches run at once, and each table holds at most `capacity` entries: anyone
/// may name a new URL with each request.
final class ClientDocuments {
    enum Outcome {
        case document(ClientIDMetadataDocument)
        case refused(String)
    }

    struct ClientDocumentError: Error {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private let loop: EventLoop
    private let wallClock: any WallClock
    /// Public addresses only; and, for the development exception, public or loopback. The
    /// second is used for nothing else.
    private var fetcher: HTTPFetcher
    private var loopbackFetcher: HTTPFetcher
    /// Fetchers a reload replaced while they had fetches running: kept until those end (a
    /// fetcher that goes drops its transfers unanswered).
    private var retired: [HTTPFetcher] = []
    private var policy: AuthorizationServerConfig.Clients
    private var issuerIsLoopback: Bool
    private var cache: [String: (document: ClientIDMetadataDocument, until: Double)] = [:]
    private var failures: [String: Double] = [:]
    private var waiting: [String: [(Outcome) -> Void]] = [:]
    private var keyCache: [String: (keys: JWKSet, until: Double)] = [:]
    private var keyFailures: [String: Double] = [:]
    private var keyWaiting: [String: [(Result<JWKSet, ClientDocumentError>) -> Void]] = [:]

    static let capacity = 10_000
    static let maxInFlight = 64
    static let minAge = 60.0
    static let maxAge = 86_400.0
    static let defaultAge = 300.0
    static let notFetched = "the client's metadata document could not be fetched"
    static let noKeys = "the client's jwks_uri gave no public key set"

    init(loop: EventLoop, wallClock: any WallClock, config: AuthorizationServerConfig) {
        self.loop = loop
        self.wallClock = wallClock
        policy = config.clients
        issuerIsLoopback = config.issuerIsLoopback
        fetcher = Self.fetcher(loop: loop, config: config, loopback: false)
        loopbackFetcher = Self.fetcher(loop: loop, config: config, loopback: true)
    }

    private static func fetcher(loop: EventLoop, config: AuthorizationServerConfig, loopback: Bool) -> HTTPFetcher {
        var settings = FetchSettings(caFile: config.clients.caFile)
        settings.maxRedirects = 0
        settings.addresses = loopback ? .publicOrLoopback : .publicOnly
        return HTTPFetcher(loop: loop, settings: settings)
    }

    /// A new config: its host policy and trust from the next fetch on. What is kept is dropped
    /// when the host policy changed: a host taken off the list is not served from the cache.
    func apply(_ config: AuthorizationServerConfig) {
        if config.clients.allowedHosts != policy.allowedHosts || config.issuerIsLoopback != issuerIsLoopback {
            cache = [:]
            keyCache = [:]
        }
        policy = config.clients
        issuerIsLoopback = config.issuerIsLoopback
        if !waiting.isEmpty || !keyWaiting.isEmpty { retired += [fetcher, loopbackFetcher] }
        fetcher = Self.fetcher(loop: loop, config: config, loopback: false)
        loopbackFetcher = Self.fetcher(loop: loop, config: config, loopback: true)
    }

    static func isLoopback(_ host: String) -> Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }

    /// Whether `url`'s host may be fetched at all.
    func admits(_ url: ClientIDURL) -> Bool {
        if Self.isLoopback(url.host) {
            // CIMD §8.6's development exception: listed exactly, with the AS itself on loopback.
            return issuerIsLoopback && policy.allowedHosts.contains(url.host)
        }
        return policy.allowedHosts.isEmpty || policy.allowedHosts.contains { url.hostMatches($0) }
    }

    /// The fetcher for `url`: the loopback one only for a host the development exception admits.
    private func fetcher(for url: ClientIDURL) -> HTTPFetcher {
        Self.isLoopback(url.host) && admits(url) ? loopbackFetcher : fetcher
    }

    private var inFlight: Int { waiting.count + keyWaiting.count }

    private func settled() {
        if waiting.isEmpty && keyWaiting.isEmpty { retired = [] }
    }

    func document(_ url: ClientIDURL, done: @escaping (Outcome) -> Void) {
        let now = wallClock.now
        guard admits(url) else { return done(.refused("the client's host is not one this AS fetches documents from")) }
        if let hit = cache[url.text], hit.until > now { return done(.document(hit.document)) }
        if let until = failures[url.text], until > now { return done(.refused(Self.notFetched)) }
        if waiting[url.text] != nil {
            waiting[url.text]?.append(done)
            return
        }
        guard inFlight < Self.maxInFlight else { return done(.refused("too many client documents are being fetched")) }
        waiting[url.text] = [done]
        let request = FetchRequest(
            url: url.text, headers: ["Accept: application/json"], timeout: 3, connectTimeout: 2,
            maxResponseBytes: ClientIDMetadataDocument.maxSize)
        fetcher(for: url).fetch(request) { [weak self] result in
            guard let self else { return }
            let now = self.wallClock.now
            var outcome = Outcome.refused(Self.notFetched)
            // Which failure it was (no such name, refused, TLS, a redirect) is not the
            // client's to learn: one description for all.
            if case .success(let r) = result, r.status == 200 {
                do throws(ClientIDMetadataDocument.Refusal) {
                    let document = try ClientIDMetadataDocument(r.body, fetchedFrom: url)
                    Self.bound(&self.cache, now: now) { $0.until > now }
                    self.cache[url.text] = (document, now + Self.age(r.headers))
                    outcome = .document(document)
                } catch {
                    outcome = .refused("the client's metadata document: \(error.description)")
                }
            }
            if case .refused = outcome {
                Self.bound(&self.failures, now: now) { $0 > now }
                self.failures[url.text] = now + 10
            }
            let waiters = self.waiting.removeValue(forKey: url.text) ?? []
            self.settled()
            for w in waiters { w(outcome) }
        }
    }

    /// The keys a `private_key_jwt` client's document gives or names.
    func keys(of document: ClientIDMetadataDocument, done: @escaping (Result<JWKSet, ClientDocumentError>) -> Void) {
        guard case .privateKeyJWT(let inline, let uri) = document.authentication else {
            return done(.failure(.init("the client is public: it has no keys")))
        }
        if let inline { return done(.success(inline)) }
        guard let uri, let url = try? ClientIDURL(uri), admits(url) else {
            return done(.failure(.init("the client's jwks_uri is not on a host this AS fetches from")))
        }
        let now = wallClock.now
        if let hit = keyCache[uri], hit.until > now { return done(.success(hit.keys)) }
        if let until = keyFailures[uri], until > now { return done(.failure(.init(Self.noKeys))) }
        if keyWaiting[uri] != nil {
            keyWaiting[uri]?.append(done)
            return
        }
        guard inFlight < Self.maxInFlight else {
            return done(.failure(.init("too many client keys are being fetched")))
        }
        keyWaiting[uri] = [done]
        let request = FetchRequest(
            url: uri, headers: ["Accept: application/json"], timeout: 3, connectTimeout: 2, maxResponseBytes: 16 * 1024)
        fetcher(for: url).fetch(request) { [weak self] result in
            guard let self else { return }
            let now = self.wallClock.now
            var outcome = Result<JWKSet, ClientDocumentError>.failure(.init(Self.noKeys))
            if case .success(let r) = result, r.status == 200, let set = try? JWKSet(bytes: r.body),
                !set.keys.contains(where: \.isPrivate)
            {
                Self.bound(&self.keyCache, now: now) { $0.until > now }
                self.keyCache[uri] = (set, now + Self.age(r.headers))
                outcome = .success(set)
            } else {
                Self.bound(&self.keyFailures, now: now) { $0 > now }
                self.keyFailures[uri] = now + 10
            }
            let waiters = self.keyWaiting.removeValue(forKey: uri) ?? []
            self.settled()
            for w in waiters { w(outcome) }
        }
    }

    /// Keeps a table under `capacity`: what still stands when it is full, else nothing (a
    /// flood of URLs starts it again rather than grows it).
    private static func bound<V>(_ table: inout [String: V], now: Double, standing: (V) -> Bool) {
        guard table.count >= capacity else { return }
        table = table.filter { standing($0.value) }
        if table.count >= capacity { table = [:] }
    }

    /// `Cache-Control: max-age` (no-store: the least), within 1 minute and 24 hours; read as
    /// a key set's is (`IssuerKeys.maxAge`).
    static func age(_ headers: [(name: String, value: String)]) -> Double {
        let header = headers.first { $0.name.lowercased() == "cache-control" }?.value
        guard let age = IssuerKeys.maxAge(header) else { return defaultAge }
        return min(max(age, minAge), maxAge)
    }
}

extension AuthorizationServerWorker {
    /// The client a `client_id` names: its metadata document, fetched (`ClientDocuments`), or
    /// the metadata it registered here, from the store.
    func client(_ id: ClientIdentifier, done: @escaping (ClientDocuments.Outcome) -> Void) {
        switch id {
        case .document(let url):
            guard let documents else { return done(.refused("no client documents")) }
            guard documents.admits(url) else {
                return done(.refused("the client's host is not one this server takes clients from"))
            }
            documents.document(url, done: done)
        case .registered(let text):
            guard config?.clients.registration == true else { return done(.refused("the client is not registered")) }
            grants.registered(text) { result in
                switch result {
                case .failure: done(.refused("the registered clients cannot be read right now"))
                case .success(nil): done(.refused("the client is not registered"))
                case .success(let bytes?):
                    guard let document = try? ClientIDMetadataDocument(registration: bytes, clientID: text) else {
                        return done(.refused("the client is not registered"))
                    }
                    done(.document(document))
                }
            }
        }
    }
}
