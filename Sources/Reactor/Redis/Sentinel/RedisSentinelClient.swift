/// A client of the master that Redis Sentinel names: asks the Sentinels for the master's
/// address, checks that the server there is a master (`ROLE`), and sends every command to it
/// over one `RedisClient`. It follows a failover by asking again when
/// - the master's connection fails (a crash, or Sentinel demoting it: Sentinel ends normal
///   clients' connections with `CLIENT KILL TYPE normal` when it reconfigures a server),
/// - the master answers `-READONLY` (it is a replica now) or `-LOADING`,
/// - a periodic check (`checkInterval`) finds the Sentinels naming another master, which
///   catches a master that was replaced but still runs and keeps its clients.
///
/// No subscription to `+switch-master`: the checks above find a switch within
/// `checkInterval` without a second, pub/sub connection per Sentinel per worker.
///
/// Commands pending on a master that goes away fail with `.unavailable` and are never sent
/// again (a `SET … NX` that ran before the connection broke would, sent again, answer that
/// the key exists, and its caller would take that for losing the race); commands sent while
/// the master is being found wait for it, `connectTimeout + commandTimeout` at most. Discovery failures
/// back off (100 ms doubling to 2 s) like `RedisClient`'s reconnects. Loop-thread only.
final class RedisSentinelClient {
    typealias Completion = RedisClient.Completion

    enum State {
        /// No master; the next command starts a discovery unless `retryAt` is ahead.
        case idle
        case discovering
        case ready(RedisClient)
        case closed
    }

    let settings: RedisSentinelSettings
    let loop: EventLoop
    let connectTimeout: Double
    let commandTimeout: Double
    let maxPending: Int
    /// Seconds between checks that the Sentinels still name the master in use.
    var checkInterval: Double = 2

    var state = State.idle
    /// One client per Sentinel, made when first asked (same index as `settings.sentinels`).
    var sentinelClients: [Int: RedisClient] = [:]
    /// The Sentinel asked first: the last one that answered.
    var preferredSentinel = 0
    /// Tells a discovery's late callbacks from the current one's.
    var discovery = 0
    let waiting: RedisWaitList<[[UInt8]]>
    var backoff = RedisBackoff(initial: 0.1, maximum: 2)
    var retryAt: ContinuousClock.Instant?
    var lastFailure: RedisError?
    var checkTimer: LoopTimer?

    init(
        loop: EventLoop, settings: RedisSentinelSettings, connectTimeout: Double, commandTimeout: Double,
        maxPending: Int
    ) {
        self.loop = loop
        self.settings = settings
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.maxPending = maxPending
        waiting = RedisWaitList(
            loop: loop, limit: connectTimeout + commandTimeout,
            awaiting: "master for \(settings.masterName) from the Sentinels")
    }

    deinit { close() }

    /// The master in use, if one is.
    var master: RedisClient? {
        if case .ready(let client) = state { return client }
        return nil
    }

    var isConnected: Bool { master?.isConnected ?? false }

    /// Sends to the master, or holds the command until one is found.
    func send(_ arguments: [[UInt8]], done: @escaping Completion) {
        switch state {
        case .closed:
            failSoon(done, RedisError(.unavailable, "\(settings.masterName): client closed"))
        case .ready(let master):
            send(arguments, to: master, done: done)
        case .discovering:
            hold(arguments, done)
        case .idle:
            if let retryAt, ContinuousClock.now < retryAt {
                let wait = Int(RedisClient.seconds(ContinuousClock.now.duration(to: retryAt)) * 1000)
                let why = lastFailure?.message ?? "no master"
                return failSoon(done, RedisError(.unavailable, "next Sentinel query in \(wait) ms after: \(why)"))
            }
            startDiscovery()
            hold(arguments, done)
        }
    }

    private func hold(_ arguments: [[UInt8]], _ done: @escaping Completion) {
        guard waiting.count < maxPending else {
            return failSoon(
                done, RedisError(.unavailable, "\(settings.masterName): \(maxPending) commands already waiting"))
        }
        waiting.append(arguments, done: done)
    }

    func send(_ arguments: [[UInt8]], to master: RedisClient, done: @escaping Completion) {
        master.send(arguments) { [weak self, weak master] result in
            guard case .success(.error(let message)) = result, let self, let master else { return done(result) }
            let code = message.prefix { $0 != " " }
            guard code == "READONLY" || code == "LOADING" else { return done(result) }
            // Not run by the server; failed, not sent again: the caller decides. Detached first
            // so that a command sent from a completion goes to the next master.
            let error = RedisError(
                .unavailable,
                "\(master.endpoint.address) answered \(code): not a usable master "
                    + "now; asking the Sentinels again")
            let detached = self.detach(master)
            done(.failure(error))
            if detached { master.close(failing: error) }
        }
    }

    /// Stops using `master` if it is still the one in use (true then); the next command asks
    /// the Sentinels at once.
    @discardableResult
    func detach(_ master: RedisClient) -> Bool {
        guard self.master === master else { return false }
        state = .idle
        retryAt = nil
        checkTimer = nil
        return true
    }

    /// Closes the master and Sentinel connections; pending and later commands fail with
    /// `.unavailable`. Idempotent.
    func close() {
        if case .closed = state { return }
        let master = self.master
        state = .closed
        checkTimer = nil
        master?.close()
        for client in sentinelClients.values { client.close() }
        sentinelClients = [:]
        waiting.failAll(RedisError(.unavailable, "\(settings.masterName): client closed"))
    }

    func failSoon(_ done: @escaping Completion, _ error: RedisError) {
        loop.execute { done(.failure(error)) }
    }
}
