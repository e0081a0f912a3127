import Foundation
import JOSE
import OAuth
import Reactor

/// Client ID Metadata Documents as the AS fetches them (draft-ietf-oauth-client-id-metadata-
/// document §5, §8.6, §8.7), on a worker's loop: only for a host `allowed_client_hosts`
/// admits; https to a public address, judged on the address connected to (a loopback one
/// only when the issuer is on loopback and the host is listed exactly); no redirect; 5 KB and
/// 3 s at most; cached by the document's `Cache-Control: max-age` between 1 minute and 24
/// hours (5 minutes when it says none); concurrent asks for one URL share one fetch. A
/// client's `jwks_uri` is fetched the same way. A refusal is not cached (§5.2: an invalid
/// document must not be), but a failing URL is asked again at most every 10 s.
final class ClientDocuments {
    enum Outcome {
        case document(ClientIDMetadataDocument)
        case refused(String)
    }

    private let loop: EventLoop
    private let wallClock: any WallClock
    private var fetcher: HTTPFetcher
    private var policy: AuthorizationServerConfig.Clients
    private var issuerIsLoopback: Bool
    private var cache: [String: (document: ClientIDMetadataDocument, until: Double)] = [:]
    private var failures: [String: (why: String, until: Double)] = [:]
    private var waiting: [String: [(Outcome) -> Void]] = [:]
    private var keyCache: [String: (keys: JWKSet, until: Double)] = [:]

    static let capacity = 10_000
    static let minAge = 60.0
    static let maxAge = 86_400.0
    static let defaultAge = 300.0

    init(loop: EventLoop, wallClock: any WallClock, config: AuthorizationServerConfig) {
        self.loop = loop
        self.wallClock = wallClock
        policy = config.clients
        issuerIsLoopback = config.issuerIsLoopback
        fetcher = Self.fetcher(loop: loop, config: config)
    }

    private static func fetcher(loop: EventLoop, config: AuthorizationServerConfig) -> HTTPFetcher {
        var settings = FetchSettings(caFile: config.clients.caFile)
        settings.maxRedirects = 0
        settings.addresses = config.issuerIsLoopback ? .publicOrLoopback : .publicOnly
        return HTTPFetcher(loop: loop, settings: settings)
    }

    /// A new config: its host policy and trust from the next fetch on; documents kept.
    func apply(_ config: AuthorizationServerConfig) {
        policy = config.clients
        issuerIsLoopback = config.issuerIsLoopback
        fetcher = Self.fetcher(loop: loop, config: config)
    }

    /// Whether `url`'s host may be fetched at all.
    func admits(_ url: ClientIDURL) -> Bool {
        let loopback = url.host == "localhost" || url.host == "::1" || url.host.hasPrefix("127.")
        if loopback {
            // CIMD §8.6's development exception: listed exactly, with the AS itself on loopback.
            return issuerIsLoopback && policy.allowedHosts.contains(url.host)
        }
        return policy.allowedHosts.isEmpty || policy.allowedHosts.contains { url.hostMatches($0) }
    }

    func document(_ url: ClientIDURL, done: @escaping (Outcome) -> Void) {
        let now = wallClock.now
        if let hit = cache[url.text], hit.until > now { return done(.document(hit.document)) }
        if let failed = failures[url.text], failed.until > now { return done(.refused(failed.why)) }
        guard admits(url) else { return done(.refused("the client's host is not one this AS fetches documents from")) }
        if waiting[url.text] != nil {
            waiting[url.text]?.append(done)
            return
        }
        waiting[url.text] = [done]
        let request = FetchRequest(
            url: url.text, headers: ["Accept: application/json"], timeout: 3, connectTimeout: 2,
            maxResponseBytes: ClientIDMetadataDocument.maxSize)
        fetcher.fetch(request) { [weak self] result in
            guard let self else { return }
            let outcome: Outcome
            let now = self.wallClock.now
            switch result {
            case .failure(let e):
                outcome = .refused("the client's metadata document could not be fetched: \(e.description)")
            case .success(let r) where r.status != 200:
                // §5: a redirect or any other status is no document.
                outcome = .refused("the client's metadata document answered \(r.status)")
            case .success(let r):
                do {
                    let document = try ClientIDMetadataDocument(r.body, fetchedFrom: url)
                    if self.cache.count >= Self.capacity { self.cache = self.cache.filter { $0.value.until > now } }
                    self.cache[url.text] = (document, now + Self.age(r.headers))
                    outcome = .document(document)
                } catch {
                    outcome = .refused("the client's metadata document: \(error)")
                }
            }
            if case .refused(let why) = outcome {
                if self.failures.count >= Self.capacity {
                    self.failures = self.failures.filter { $0.value.until > now }
                }
                self.failures[url.text] = (why, now + 10)
            }
            for w in self.waiting.removeValue(forKey: url.text) ?? [] { w(outcome) }
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
        fetcher.fetch(
            FetchRequest(
                url: uri, headers: ["Accept: application/json"], timeout: 3, connectTimeout: 2,
                maxResponseBytes: 16 * 1024)
        ) { [weak self] result in
            guard let self else { return }
            guard case .success(let r) = result, r.status == 200, let set = try? JWKSet(bytes: r.body),
                !set.keys.contains(where: \.isPrivate)
            else { return done(.failure(.init("the client's jwks_uri gave no public key set"))) }
            if self.keyCache.count >= Self.capacity { self.keyCache = [:] }
            self.keyCache[uri] = (set, self.wallClock.now + Self.age(r.headers))
            done(.success(set))
        }
    }

    struct ClientDocumentError: Error {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// `Cache-Control: max-age` (no-store: the least), within 1 minute and 24 hours.
    static func age(_ headers: [(name: String, value: String)]) -> Double {
        guard let value = headers.first(where: { $0.name.lowercased() == "cache-control" })?.value.lowercased() else {
            return defaultAge
        }
        if value.contains("no-store") || value.contains("no-cache") { return minAge }
        for part in value.split(separator: ",") {
            let item = part.trimmingCharacters(in: .whitespaces)
            if item.hasPrefix("max-age="), let seconds = Double(item.dropFirst("max-age=".count)) {
                return min(max(seconds, minAge), maxAge)
            }
        }
        return defaultAge
    }
}
