import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// Every configured issuer's keys, managed on the main loop and copied to each worker
/// (workers never share a mutable key set). Remote sets refresh in the background; a
/// worker's unknown-kid refetch goes through here, so one fetch serves all workers.
final class IssuerKeyService {
    private let loop: EventLoop
    private let log: Logger
    /// "Now" for key refresh and the unknown-kid refetch limit.
    let wallClock: any WallClock
    private var workers: [Worker] = []
    private var remote: [String: (config: IssuerConfig, keys: IssuerKeys)] = [:]
    private var loaded: [String: JWKSet] = [:]
    private var configured: [String] = []
    /// The latest metadata of each issuer that publishes it (main loop).
    private(set) var metadataByIssuer: [String: ProviderMetadata] = [:]
    /// `jwks_file` issuers: when the file was last read, and why it did not load.
    private var fileReads: [String: (at: Double, error: String?)] = [:]
    /// Each remote issuer's latest failed fetch, kept after a later success (the status page
    /// shows when it last failed, not only whether it fails now).
    private var lastFailures: [String: (at: Double, error: String)] = [:]

    init(loop: EventLoop, log: Logger, wallClock: any WallClock) {
        self.loop = loop
        self.wallClock = wallClock
        self.log = log
    }

    /// Issuers whose keys have never loaded (readiness).
    var missing: [String] { configured.filter { loaded[$0] == nil } }

    /// Issuers serving their last good keys while refreshes fail.
    var stale: [String] { remote.filter { $0.value.keys.lastError != nil && loaded[$0.key] != nil }.keys.sorted() }

    func attach(_ workers: [Worker]) {
        self.workers = workers
        for w in workers {
            w.tokens.issuerKeys.requestRefetch = { [weak self, loop] issuer, done in
                loop.execute {
                    guard let self else { return }
                    self.refetch(issuer) { set in w.loop.execute { done(set) } }
                }
            }
        }
    }

    /// (Re)configures from `config` (main loop). Unchanged remote issuers keep their state.
    func apply(_ config: GatewayConfig) {
        configured = config.issuers.keys.sorted()
        var next: [String: (config: IssuerConfig, keys: IssuerKeys)] = [:]
        for (name, issuer) in config.issuers {
            switch issuer.keys {
            case .jwksFile(let path):
                do {
                    guard let data = FileManager.default.contents(atPath: path) else {
                        throw ReactorError("cannot read \(path)")
                    }
                    let set = try JWKSet(bytes: Array(data))
                    publish(name, set, source: path)
                    fileReads[name] = (wallClock.now, nil)
                } catch {
                    fileReads[name] = (wallClock.now, "\(error)")
                    log.error(
                        "issuer keys not loaded", metadata: ["issuer": .string(name), "error": .string("\(error)")])
                }
            case .own:
                // The AS's own keys, public halves only: known at start, changed by a reload.
                if let server = config.authorizationServer {
                    publish(name, server.publicKeys, source: "authorization_server")
                }
            case .discovery, .jwksURI:
                if let old = remote[name], old.config.issuer == issuer.issuer, old.config.keys == issuer.keys,
                    old.config.discoveryBase == issuer.discoveryBase,
                    old.config.caFile == issuer.caFile
                {
                    next[name] = old
                    continue
                }
                let source: IssuerKeys.Source
                if case .jwksURI(let u) = issuer.keys {
                    source = .jwksURI(u)
                } else {
                    source = .discovery(
                        issuer: issuer.issuer, at: issuer.discoveryBase,
                        alsoNamed: issuer.discoveryAlsoNamed)
                }
                let keys = IssuerKeys(
                    name: name, source: source,
                    fetcher: HTTPFetcher(loop: loop, settings: FetchSettings(caFile: issuer.caFile)),
                    loop: loop, wallClock: wallClock)
                keys.onUpdate = { [weak self, weak keys] set in
                    self?.publish(name, set, source: "remote")
                    if let metadata = keys?.metadata { self?.publishMetadata(name, metadata) }
                }
                keys.onError = { [weak self] error in
                    self?.lastFailures[name] = (self?.wallClock.now ?? 0, error)
                    self?.log.warning(
                        "issuer keys fetch failed; the last good keys keep serving",
                        metadata: ["issuer": .string(name), "error": .string(error)])
                }
                next[name] = (issuer, keys)
                keys.start()
            }
        }
        remote = next
        for name in loaded.keys where config.issuers[name] == nil { loaded[name] = nil }
        for name in fileReads.keys where remote[name] != nil || config.issuers[name] == nil { fileReads[name] = nil }
        for name in lastFailures.keys where remote[name] == nil { lastFailures[name] = nil }
    }

    /// Each configured issuer's keys as the status page shows them (main loop): key ids
    /// only, never key material.
    func keyStates() -> [String: IssuerKeyState] {
        var out: [String: IssuerKeyState] = [:]
        for name in configured {
            var state = IssuerKeyState()
            state.keyIDs = loaded[name]?.keys.map { $0.kid ?? "(no kid: \($0.kty))" } ?? []
            state.loaded = loaded[name] != nil
            if let keys = remote[name]?.keys {
                state.lastFetch = keys.lastSuccessAt
                state.failing = keys.lastError != nil
                state.lastError = lastFailures[name]
                state.failures = keys.failureCount
            } else if let read = fileReads[name] {
                state.lastFetch = read.error == nil ? read.at : nil
                state.failing = read.error != nil
                state.lastError = read.error.map { (read.at, $0) }
            }
            out[name] = state
        }
        return out
    }

    /// Prometheus lines for the issuers' key state (main loop).
    func metricsText(now: Double) -> String {
        var out = PrometheusText()
        out.labelled(
            "tokengate_issuer_keys_loaded", .gauge,
            help: "Whether an issuer's keys are loaded (the last good set serves through IdP outages).",
            label: "issuer", configured.map { ($0, loaded[$0] == nil ? 0 : 1) })
        let fetched = remote.sorted(by: { $0.key < $1.key })
        out.labelled(
            "tokengate_issuer_key_fetch_failures_total", .counter, help: "Failed discovery/JWKS fetches.",
            label: "issuer", fetched.map { ($0.key, $0.value.keys.failureCount) })
        out.labelled(
            "tokengate_issuer_keys_age_seconds", .gauge, help: "Seconds since the keys were last fetched.",
            label: "issuer",
            fetched.compactMap { name, entry in entry.keys.lastSuccessAt.map { (name, Int(now - $0)) } })
        return out.text
    }

    private func publish(_ name: String, _ set: JWKSet, source: String) {
        loaded[name] = set
        log.info(
            "issuer keys loaded",
            metadata: [
                "issuer": .string(name), "keys": .stringConvertible(set.keys.count),
                "skipped": .stringConvertible(set.skipped.count), "source": .string(source)
            ])
        for w in workers { w.loop.execute { w.tokens.issuerKeys.update(name, set) } }
    }

    private func publishMetadata(_ name: String, _ metadata: ProviderMetadata) {
        if !metadata.refusedMTLSAliases.isEmpty
            && metadataByIssuer[name]?.refusedMTLSAliases != metadata.refusedMTLSAliases
        {
            log.warning(
                "mtls_endpoint_aliases left out: not https URLs with a host; clients with certificates call the plain endpoints",
                metadata: [
                    "issuer": .string(name), "aliases": .string(metadata.refusedMTLSAliases.joined(separator: ", "))
                ])
        }
        metadataByIssuer[name] = metadata
        for w in workers {
            w.loop.execute {
                w.tokens.introspector.discoveredEndpoints[name] = metadata.introspectionEndpoint
                let aliased = metadata.usingMTLSAliases()
                w.tokens.introspector.discoveredMTLSEndpoints[name] = aliased.introspectionEndpoint
                w.services.modules.discovered(issuer: name, metadata: metadata)
                w.login.providerMetadata[name] = metadata
            }
        }
    }

    private func refetch(_ issuer: String, _ done: @escaping (JWKSet?) -> Void) {
        guard let entry = remote[issuer] else {
            done(nil)
            return
        }
        entry.keys.refetchForUnknownKid { [weak entry = entry.keys] changed in done(changed ? entry?.current : nil) }
    }
}
