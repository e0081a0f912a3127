/// A Redis Cluster client for one worker's loop: one `RedisClient` (one pipelined
/// connection) per master node, each command sent to the master of its key's slot by the
/// slot map (`CLUSTER SLOTS`, loaded from any known node or seed).
///
/// Redirections (cluster specification, "Redirection and resharding") are followed once
/// per command: `-MOVED` updates the map, asks for a fresh one, and sends the command to the
/// named node; `-ASK` sends `ASKING` and the command to the named node, the map unchanged.
/// A command redirected a second time fails with `.unavailable` (its slot is moving right
/// now). A redirected command was not run, so sending it again is safe; a command whose
/// connection fails is never sent again: it fails with `.unavailable`, and only the commands
/// for that node's slots fail while the node is down. A node's failure also asks for a fresh
/// map, which after a cluster failover names the promoted replica.
///
/// Until the first map arrives commands wait (`connectTimeout + commandTimeout` at most);
/// failed loads back off (100 ms doubling to 2 s), and successful ones are at most one per
/// `minimumRefreshInterval`. Loop-thread only.
final class RedisClusterClient {
    typealias Completion = RedisClient.Completion

    /// A command with its slot (nil: no key, any node will do).
    struct Command {
        let arguments: [[UInt8]]
        let slot: Int?
    }

    let settings: RedisClusterSettings
    let loop: EventLoop
    let connectTimeout: Double
    let commandTimeout: Double
    let maxPending: Int
    /// Seconds between two map loads that succeed (each `-MOVED` asks for one).
    var minimumRefreshInterval: Double = 0.5

    var map = RedisSlotMap()
    /// One client per node, by address.
    var clients: [String: RedisClient] = [:]
    var closed = false
    /// A `CLUSTER SLOTS` is out; `load` tells its callbacks from an earlier load's.
    var loading = false
    var load = 0
    var backoff = RedisBackoff(initial: 0.1, maximum: 2)
    /// No map load before this instant.
    var refreshAfter: ContinuousClock.Instant?
    var lastFailure: RedisError?
    let waiting: RedisWaitList<Command>
    /// Redirections followed so far (for tests and metrics).
    var movedCount = 0
    var askCount = 0

    init(
        loop: EventLoop, settings: RedisClusterSettings, connectTimeout: Double, commandTimeout: Double, maxPending: Int
    ) {
        self.loop = loop
        self.settings = settings
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.maxPending = maxPending
        waiting = RedisWaitList(loop: loop, limit: connectTimeout + commandTimeout, awaiting: "cluster slot map")
    }

    deinit { close() }

    /// Whether the map is loaded and some node's connection is up.
    var isConnected: Bool { !map.isEmpty && clients.values.contains { $0.isConnected } }

    /// Sends `arguments` to the master of `slot` (any master when nil).
    func send(_ arguments: [[UInt8]], slot: Int?, done: @escaping Completion) {
        if closed { return failSoon(done, RedisError(.unavailable, "cluster client closed")) }
        if let why = Self.refusal(for: arguments) { return failSoon(done, RedisError(.protocolError, why)) }
        let command = Command(arguments: arguments, slot: slot)
        if !map.isEmpty { return route(command, redirected: false, done: done) }
        if !loading {
            if let refreshAfter, ContinuousClock.now < refreshAfter {
                let wait = Int(RedisClient.seconds(ContinuousClock.now.duration(to: refreshAfter)) * 1000)
                let why = lastFailure?.message ?? "no slot map"
                return failSoon(done, RedisError(.unavailable, "next slot map load in \(wait) ms after: \(why)"))
            }
            refresh()
        }
        guard waiting.count < maxPending else {
            return failSoon(done, RedisError(.unavailable, "\(maxPending) commands already waiting for the slot map"))
        }
        waiting.append(command, done: done)
    }

    /// Sends to the slot's master by the map.
    func route(_ command: Command, redirected: Bool, done: @escaping Completion) {
        let node: RedisEndpoint?
        if let slot = command.slot { node = map.node(for: slot) } else { node = anyNode() }
        guard let node else {
            requestRefresh()
            return failSoon(done, RedisError(.unavailable, "slot \(command.slot ?? -1) has no master in the slot map"))
        }
        dispatch(command, to: node, asking: false, redirected: redirected, done: done)
    }

    private func dispatch(
        _ command: Command, to node: RedisEndpoint, asking: Bool, redirected: Bool,
        done: @escaping Completion
    ) {
        let client = client(for: node)
        // Pipelined on the same connection, so ASKING applies to the very next command.
        if asking { client.send(["ASKING"]) { _ in } }
        client.send(command.arguments) { [weak self] result in
            guard let self, case .success(.error(let message)) = result, let redirect = RedisRedirect(message) else {
                return done(result)
            }
            self.follow(redirect, of: command, from: node, redirected: redirected, done: done)
        }
    }

    private func follow(
        _ redirect: RedisRedirect, of command: Command, from node: RedisEndpoint, redirected: Bool,
        done: @escaping Completion
    ) {
        let target = settings.node(host: redirect.host.isEmpty ? node.host : redirect.host, port: redirect.port)
        switch redirect.kind {
        case .moved:
            movedCount += 1
            map.assign(redirect.slot, to: target)
            requestRefresh()
        case .ask:
            askCount += 1
        }
        guard !redirected, !closed else {
            let why =
                closed
                ? "cluster client closed" : "slot \(redirect.slot) redirected again, to \(target.address): it is moving"
            return done(.failure(RedisError(.unavailable, why)))
        }
        dispatch(command, to: target, asking: redirect.kind == .ask, redirected: true, done: done)
    }

    /// A master whose connection is up, else the first of the map.
    private func anyNode() -> RedisEndpoint? {
        map.nodes.first { clients[$0.address]?.isConnected == true } ?? map.nodes.first
    }

    /// The node's client, made on first use.
    func client(for node: RedisEndpoint) -> RedisClient {
        if let client = clients[node.address] { return client }
        let client = RedisClient(
            loop: loop, endpoint: node, connectTimeout: connectTimeout,
            commandTimeout: commandTimeout, maxPending: maxPending)
        // A node that fails may have been failed over: the map is asked for again, on the next
        // loop turn (the hook may not call into the failing client).
        client.onFailure = { [weak self, loop] _ in
            loop.execute { self?.requestRefresh() }
        }
        clients[node.address] = client
        return client
    }

    /// Closes every node connection; pending and later commands fail with `.unavailable`.
    /// Idempotent.
    func close() {
        guard !closed else { return }
        closed = true
        loading = false
        let all = clients.values
        clients = [:]
        for client in all { client.close() }
        waiting.failAll(RedisError(.unavailable, "cluster client closed"))
    }

    func failSoon(_ done: @escaping Completion, _ error: RedisError) {
        loop.execute { done(.failure(error)) }
    }

    /// Commands a cluster client cannot carry: a transaction needs one connection to one
    /// node for several commands, and these change how a shared connection is routed.
    static func refusal(for arguments: [[UInt8]]) -> String? {
        guard let name = arguments.first else { return nil }
        let upper = String(decoding: name, as: UTF8.self).uppercased()
        return refused.contains(upper) ? "\(upper) cannot be sent through a cluster client" : nil
    }

    private static let refused: Set<String> = [
        "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH", "ASKING", "READONLY", "READWRITE"
    ]
}
