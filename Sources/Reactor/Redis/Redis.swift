/// Redis for one worker's loop, whatever the deployment: one server (plain or TLS), a
/// master found through Sentinel, or a Redis Cluster, behind one `send` that behaves the same
/// on each. Made from a `RedisDeployment` (a configuration URL); nothing connects until the
/// first command. Releasing it closes it, as `close()` does. Loop-thread only.
///
/// Every command ends, exactly once and on the loop, in a reply or a `RedisError`, and none
/// waits forever: each server a command goes to allows it `connectTimeout + commandTimeout`
/// (see `RedisClient`), and finding the master through the Sentinels or loading the cluster
/// slot map first, at most as long again; while servers are unreachable commands fail at
/// once. An `-ERR …` reply is `.success(.error(…))`. A command whose
/// connection fails is never sent again, since it may have run; a command a server refused
/// without running it (`-MOVED`, `-ASK` in a cluster) is sent where the server says, once.
///
/// Keys: a cluster routes by the key arguments' hash slot, so each command names them, or
/// is one whose keys `send(_:done:)` knows. Keys in different slots are refused
/// (`.protocolError`, nothing sent) in every deployment, so that code tested against one
/// server works unchanged against a cluster.
public final class Redis {
    typealias Completion = RedisClient.Completion

    /// The deployment every command goes to.
    public let deployment: RedisDeployment

    private enum Backend {
        case standalone(RedisClient)
        case sentinel(RedisSentinelClient)
        case cluster(RedisClusterClient)
    }

    private let backend: Backend
    private let loop: EventLoop

    /// `connectTimeout` bounds each connect with its handshake (TLS, AUTH, SELECT),
    /// `commandTimeout` the wait for a reply, `maxPending` the commands queued or in flight
    /// per server (more fail with `.unavailable`).
    public init(
        loop: EventLoop, deployment: RedisDeployment, connectTimeout: Double = 1, commandTimeout: Double = 1,
        maxPending: Int = 10_000
    ) {
        self.deployment = deployment
        self.loop = loop
        switch deployment {
        case .standalone(let endpoint):
            backend = .standalone(
                RedisClient(
                    loop: loop, endpoint: endpoint, connectTimeout: connectTimeout,
                    commandTimeout: commandTimeout, maxPending: maxPending))
        case .sentinel(let settings):
            backend = .sentinel(
                RedisSentinelClient(
                    loop: loop, settings: settings, connectTimeout: connectTimeout,
                    commandTimeout: commandTimeout, maxPending: maxPending))
        case .cluster(let settings):
            backend = .cluster(
                RedisClusterClient(
                    loop: loop, settings: settings, connectTimeout: connectTimeout,
                    commandTimeout: commandTimeout, maxPending: maxPending))
        }
    }

    deinit { close() }

    /// Sends one command (binary-safe arguments, the command name first) whose key arguments
    /// are at the indexes `keys` (`[]`: a command without keys, sent to any node of a
    /// cluster). `done` runs exactly once on the loop, never before this returns. Fails with
    /// `.protocolError`, unsent, when a key index is outside the arguments, the keys hash to
    /// different cluster slots, or the command cannot share a pipelined connection (see
    /// `RedisClient.send(_:done:)`; on a cluster also MULTI/EXEC/WATCH, ASKING, READONLY).
    public func send(_ arguments: [[UInt8]], keys: [Int], done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        var done = done
        if let observer = loop.callObserver, let name = arguments.first,
            let token = observer.redisStarting(String(decoding: name, as: UTF8.self).uppercased())
        {
            let caller = done
            done = { result in
                if case .failure(let e) = result {
                    observer.redisEnded(token, error: e) { caller(result) }
                } else {
                    observer.redisEnded(token, error: nil) { caller(result) }
                }
            }
        }
        let slot: Int?
        do throws(RedisError) {
            try RedisCommand.validate(arguments)
            slot = try RedisHashSlot.slot(of: arguments, keys: keys)
        } catch {
            return loop.execute { done(.failure(error)) }
        }
        switch backend {
        case .standalone(let client): client.send(arguments, done: done)
        case .sentinel(let client): client.send(arguments, done: done)
        case .cluster(let client): client.send(arguments, slot: slot, done: done)
        }
    }

    /// The Redis Cluster hash slot of `key` (its hash tag's, when it has one). Keys of one
    /// command must share it, in every deployment (see `send(_:keys:done:)`), so a caller
    /// that gathers keys into one command groups them by it.
    public static func slot(ofKey key: [UInt8]) -> Int { RedisHashSlot.slot(of: key) }

    /// `send(_:keys:done:)` with arguments given as strings (UTF-8).
    public func send(_ arguments: [String], keys: [Int], done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        send(arguments.map { Array($0.utf8) }, keys: keys, done: done)
    }

    /// Sends a command whose keys this client knows: GET, SET, GETDEL, INCR, INCRBY, DECR,
    /// DECRBY, EXPIRE, PEXPIRE, PERSIST, TTL, PTTL, SADD, SREM, SMEMBERS, SISMEMBER, SCARD
    /// (key first); DEL, UNLINK, EXISTS, MGET (every argument a key); EVAL, EVALSHA, EVAL_RO,
    /// EVALSHA_RO (`numkeys` keys); PING, ECHO (none). Any other command fails with
    /// `.protocolError`, unsent: name its keys with `send(_:keys:done:)`.
    public func send(_ arguments: [[UInt8]], done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        let keys: [Int]?
        do throws(RedisError) {
            keys = try RedisKeys.indexes(of: arguments)
        } catch {
            return loop.execute { done(.failure(error)) }
        }
        guard let keys else {
            let name = arguments.first.map { String(decoding: $0, as: UTF8.self).uppercased() } ?? "an empty command"
            let error = RedisError(.protocolError, "the key arguments of \(name) are not known: use send(_:keys:done:)")
            return loop.execute { done(.failure(error)) }
        }
        send(arguments, keys: keys, done: done)
    }

    /// `send(_:done:)` with arguments given as strings (UTF-8).
    public func send(_ arguments: [String], done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        send(arguments.map { Array($0.utf8) }, done: done)
    }

    /// Whether a connection is up: to the server, to the master, or to some cluster node.
    public var isConnected: Bool {
        switch backend {
        case .standalone(let client): return client.isConnected
        case .sentinel(let client): return client.isConnected
        case .cluster(let client): return client.isConnected
        }
    }

    /// The Sentinel client, for a Sentinel deployment (tests look at its master).
    var sentinelClient: RedisSentinelClient? {
        if case .sentinel(let client) = backend { return client }
        return nil
    }

    /// The Cluster client, for a Cluster deployment (tests look at its map and redirections).
    var clusterClient: RedisClusterClient? {
        if case .cluster(let client) = backend { return client }
        return nil
    }

    /// Closes every connection; pending commands fail with `.unavailable` before it returns,
    /// later ones the same way. Idempotent.
    public func close() {
        switch backend {
        case .standalone(let client): client.close()
        case .sentinel(let client): client.close()
        case .cluster(let client): client.close()
        }
    }
}
