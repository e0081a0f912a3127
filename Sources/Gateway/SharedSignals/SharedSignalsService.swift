import Foundation
import JOSE
import Logging
import OAuth
import Reactor

/// The transmitters' streams on the main loop: made at start and for each new config (a
/// transmitter whose settings did not change keeps its stream), their keys refetched for the
/// push endpoints on an unknown `kid`, and the revocations purged once a minute. Main loop.
final class SharedSignalsService {
    private let loop: EventLoop
    private let log: Logger
    let hub: SharedSignalsHub
    private let wallClock: any WallClock
    private let grantTokens: ProcessGrantTokens
    private let fetchers: BackChannelFetchers
    private var streams: [String: TransmitterStream] = [:]
    /// The push credential each stream was set up with: a new one (a new session key) sets the
    /// stream up again.
    private var credentials: [String: String] = [:]
    private var purgeTimer: LoopTimer?
    /// The Redis store, when there is one: its revocation log is read from start.
    private let store: (client: Redis, prefix: String)?
    private(set) var logReader: RevocationLog.Reader?
    /// The token endpoint an issuer's metadata names (the `client` auth's), by issuer name.
    var tokenEndpoint: (String) -> (plain: String?, mtls: String?)? = { _ in nil }

    init(
        loop: EventLoop, log: Logger, hub: SharedSignalsHub, wallClock: any WallClock, grantTokens: ProcessGrantTokens,
        store: (client: Redis, prefix: String)?
    ) {
        self.store = store
        self.loop = loop
        self.log = log
        self.hub = hub
        self.wallClock = wallClock
        self.grantTokens = grantTokens
        fetchers = BackChannelFetchers(loop: loop)
        hub.refetchKeys = { [weak self, loop] name, done in
            loop.execute {
                guard let keys = self?.streams[name]?.keys else { return done(nil) }
                keys.refetchForUnknownKid { changed in done(changed ? keys.current : nil) }
            }
        }
        purgeTimer = LoopTimer(loop: loop, seconds: 60, repeating: true) { [hub, wallClock] in
            hub.purge(now: wallClock.now)
        }
    }

    /// The secret every replica derives the push `Authorization` from: `session.keys`' first
    /// key, through HMAC under its own label, so the credential is never the key itself.
    static func pushSecret(_ config: GatewayConfig) -> MACKey {
        let key = config.session.keys.first ?? ProcessSecrets.sessionKey
        let derived = MACKey(secret: key)?.authenticate(Array("tokengate/ssf-push-key/v1".utf8)) ?? key
        guard let mac = MACKey(secret: derived) else { preconditionFailure("a session key is 32 bytes") }
        return mac
    }

    func apply(_ config: GatewayConfig) {
        let secret = Self.pushSecret(config)
        hub.apply(config, pushSecret: secret)
        // The authorization server writes its own revocations to the same log.
        if logReader == nil, !config.sharedSignals.isEmpty || config.authorizationServer != nil, let store {
            logReader = RevocationLog.Reader(
                client: store.client, prefix: store.prefix, hub: hub, log: log, wallClock: wallClock, loop: loop)
        }
        var next: [String: TransmitterStream] = [:]
        var nextCredentials: [String: String] = [:]
        for (name, t) in config.sharedSignals {
            let credential = SharedSignalsHub.pushAuthorization(t, secret: secret)
            nextCredentials[name] = credential
            if let old = streams[name], old.config.issuer == t.issuer, old.config.endpointURL == t.endpointURL,
                old.config.delivery == t.delivery, old.config.pollInterval == t.pollInterval,
                old.config.profile == t.profile,
                old.config.eventURIs == t.eventURIs, Self.sameAuth(old.config.auth, t.auth),
                credentials[name] == credential
            {
                next[name] = old
                continue
            }
            streams[name]?.stop()
            let stream = TransmitterStream(
                config: t, loop: loop, log: log, hub: hub, wallClock: wallClock,
                revocationLog: store.map {
                    RevocationLog.Writer(client: $0.client, prefix: $0.prefix, hub: hub, wallClock: wallClock)
                }, authorize: authorizer(t.auth, client: config.clients))
            next[name] = stream
            stream.start()
        }
        for (name, stream) in streams where next[name] == nil { stream.stop() }
        streams = next
        credentials = nextCredentials
    }

    /// Whether the standing revocations are all known here: the store's log read to its end
    /// once (always, without a Redis store).
    var revocationsLoaded: Bool { logReader?.caughtUp ?? true }

    /// Why the store's revocations were not read, once the reader stopped waiting for them.
    var revocationsUnread: String? { logReader?.gaveUp == true ? logReader?.lastError ?? "unknown" : nil }

    private static func sameAuth(_ a: TransmitterConfig.TransmitterAuth, _ b: TransmitterConfig.TransmitterAuth) -> Bool
    {
        switch (a, b) {
        case (.none, .none): true
        case (.bearerFile(let x), .bearerFile(let y)): x == y
        case (.client(let x), .client(let y)): x == y
        case (.serviceAccount(let x), .serviceAccount(let y)): x.email == y.email && x.keyID == y.keyID
        default: false
        }
    }

    /// How calls to the transmitter authenticate: the token file as it is now (it may have
    /// rotated), or a client-credentials token asked for once per process.
    private func authorizer(_ auth: TransmitterConfig.TransmitterAuth, client clients: [String: ClientConfig])
        -> (@escaping (String?) -> Void) -> Void
    {
        switch auth {
        case .none:
            return { done in done(nil) }
        case .bearerFile(let path):
            return { done in
                if case .success(let token) = UpstreamSecretFile.read(path) {
                    done("Bearer " + token)
                } else {
                    done(nil)
                }
            }
        case .serviceAccount(let account):
            // Signed here, an hour's life; a new one once 50 minutes of it are gone.
            var token: (value: String, at: Double)?
            return { [wallClock] done in
                let now = wallClock.now
                if let current = token, now - current.at <= 3000 { return done("Bearer " + current.value) }
                token = account.token(now: Int64(now)).map { ($0, now) }
                done(token.map { "Bearer " + $0.value })
            }
        case .client(let grant):
            guard let client = clients[grant.clientName] else { return { done in done(nil) } }
            let source = ClientCredentialsToken(grant: grant, client: client, fetchers: fetchers, shared: grantTokens)
            return { [weak self] done in
                if let known = self?.tokenEndpoint(grant.issuer) { source.discovered(known) }
                source.get(timeout: 10) { result in done((try? result.get()).map { "Bearer " + $0 }) }
            }
        }
    }
}
