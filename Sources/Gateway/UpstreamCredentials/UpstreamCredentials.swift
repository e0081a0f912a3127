import Foundation
import Reactor

/// One worker's side of the upstreams' `credentials`: each static secret as the main loop's
/// `UpstreamSecretService` last sent it, and each client-credentials token's source, over
/// the process's held tokens (one token request per process, `ProcessGrantTokens`).
/// Loop-thread only.
final class UpstreamCredentials {
    private let fetchers: BackChannelFetchers
    private let shared: ProcessGrantTokens
    private var secrets: [String: String] = [:]
    private var sources: [String: ClientCredentialsToken] = [:]
    /// Token endpoints from issuers' metadata, by issuer name: the plain one, and the one for
    /// clients with a certificate (RFC 8705 §5 aliases).
    private var tokenEndpoints: [String: (plain: String?, mtls: String?)] = [:]

    init(loop: EventLoop, shared: ProcessGrantTokens) {
        fetchers = BackChannelFetchers(loop: loop)
        self.shared = shared
    }

    /// A new config: a token source for each upstream with `client_credentials`; what was held
    /// under the old config is not used (a client's secret may have changed under its name).
    func apply(_ config: GatewayConfig) {
        shared.clear()
        var next: [String: ClientCredentialsToken] = [:]
        for (name, upstream) in config.upstreams {
            guard case .clientCredentials(let grant) = upstream.credentials,
                let client = config.clients[grant.clientName]
            else { continue }
            let source = ClientCredentialsToken(grant: grant, client: client, fetchers: fetchers, shared: shared)
            if let known = tokenEndpoints[grant.issuer] { source.discovered(known) }
            next[name] = source
        }
        sources = next
        secrets = secrets.filter { config.upstreams[$0.key]?.credentials != nil }
    }

    /// An issuer's metadata arrived: its token endpoint, for the upstreams' grants.
    func discovered(issuer: String, tokenEndpoint: String?, mtls: String?) {
        tokenEndpoints[issuer] = (tokenEndpoint, mtls)
        for source in sources.values where source.grant.issuer == issuer {
            source.discovered((tokenEndpoint, mtls))
        }
    }

    /// The secret file's value now (the service read it again), or nil: the upstream has none.
    func update(secret: String?, for upstream: String) { secrets[upstream] = secret }

    /// The upstream's secret as last read: the service's, else the config's own read.
    func secret(for upstream: String, loaded: String) -> String { secrets[upstream] ?? loaded }

    func source(for upstream: String) -> ClientCredentialsToken? { sources[upstream] }
}
