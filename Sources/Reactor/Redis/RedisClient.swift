/// An asynchronous Redis client for one worker's loop: one pipelined connection to one
/// endpoint (plain TCP, or TLS for `rediss://`), opened on the first command, logged in
/// (`AUTH`) and switched to the endpoint's database (`SELECT`) before any command goes out,
/// and after a failure reopened by the first command once a backoff (100 ms doubling to 5 s)
/// has passed. Replies are matched to commands first in, first out. Releasing the client
/// closes it, as `close()` does.
///
/// Every command ends, exactly once and on the loop, in a reply or a `RedisError`; none can
/// wait forever: `connectTimeout` bounds connect plus handshake, `commandTimeout` bounds
/// the age of the oldest unanswered command, and while the server is unreachable commands
/// fail at once instead of queueing. Loop-thread only: the owning worker calls everything
/// on its loop.
public final class RedisClient {
    typealias Completion = (Result<RedisReply, RedisError>) -> Void

    /// The server, login and database of every connection.
    public let endpoint: RedisEndpoint
    /// Seconds allowed for the TCP connect and the handshake together.
    public let connectTimeout: Double
    /// Seconds the oldest unanswered command may wait; then every command on the connection
    /// fails with `.timeout` and the connection is dropped, so a late reply can never be
    /// taken for the answer to a later command.
    public let commandTimeout: Double
    /// Commands queued or in flight at most; more fail with `.unavailable`.
    public let maxPending: Int

    enum Phase { case idle, connecting, ready, closed }

    /// A command written to the connection, waiting for its reply.
    enum Sent {
        /// `AUTH` or `SELECT` of the handshake, bounded by `connectTimeout`.
        case handshake(step: String)
        case command(deadline: ContinuousClock.Instant, done: Completion)
    }

    let loop: EventLoop
    var phase = Phase.idle
    var connection: RedisConnection?
    /// Commands sent while connecting, already encoded; written once the handshake is done.
    var queued = RedisQueue<(bytes: [UInt8], done: Completion)>()
    var inFlight = RedisQueue<Sent>()
    var backoff = RedisBackoff()
    /// No connect attempt before this instant (set after a failure).
    var retryAt: ContinuousClock.Instant?
    var lastFailure: RedisError?
    var connectTimer: LoopTimer?
    var commandTimer: LoopTimer?
    /// The `rediss://` context, made on the first connect and kept for the next ones.
    var tlsContext: TLSClientContext?
    /// Told of every failure that drops the connection or a connect attempt (not of
    /// `close()`), after the client has settled its state and before the pending commands'
    /// completions run. Sentinel and Cluster clients learn here that a server went away. It
    /// must not call back into this client synchronously.
    var onFailure: ((RedisError) -> Void)?

    /// Creates the client; nothing connects until the first command.
    public init(
        loop: EventLoop, endpoint: RedisEndpoint, connectTimeout: Double = 1, commandTimeout: Double = 1,
        maxPending: Int = 10_000
    ) {
        self.loop = loop
        self.endpoint = endpoint
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.maxPending = maxPending
    }

    deinit { close() }

    /// Whether the connection is up and its handshake done.
    public var isConnected: Bool { phase == .ready }

    /// Commands queued or in flight (handshake steps included).
    var pendingCount: Int { queued.count + inFlight.count }

    /// Sends one command (binary-safe arguments, the command name first); `done` runs
    /// exactly once on the loop, never before this returns. `-ERR …` arrives as
    /// `.success(.error(…))`. Commands that would break reply matching or the endpoint's
    /// login and database (SUBSCRIBE, MONITOR, CLIENT REPLY, HELLO, AUTH, SELECT, RESET…)
    /// fail with `.protocolError` without being sent.
    public func send(_ arguments: [[UInt8]], done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        loop.assertInLoop()
        let bytes: [UInt8]
        do throws(RedisError) {
            try RedisCommand.validate(arguments)
            bytes = try RedisCommand.encode(arguments)
        } catch {
            return failSoon([done], error)
        }
        switch phase {
        case .closed:
            failSoon([done], RedisError(.unavailable, "\(endpoint.address): client closed"))
        case _ where pendingCount >= maxPending:
            failSoon([done], RedisError(.unavailable, "\(endpoint.address): \(maxPending) commands already pending"))
        case .ready:
            inFlight.append(.command(deadline: deadline(), done: done))
            guard connection?.write(bytes) == true else {
                return drop(RedisError(.unavailable, "\(endpoint.address): cannot write to the connection"), soon: true)
            }
            armCommandTimer()
        case .connecting:
            queued.append((bytes, done))
        case .idle:
            if let retryAt, ContinuousClock.now < retryAt {
                let wait = Self.seconds(ContinuousClock.now.duration(to: retryAt))
                let why = lastFailure?.message ?? "connect failed"
                return failSoon(
                    [done], RedisError(.unavailable, "next connect attempt in \(Int(wait * 1000)) ms after: \(why)"))
            }
            startConnect()
            // A resolver that answers from /etc/hosts can report a failure inside connect.
            if phase == .connecting {
                queued.append((bytes, done))
            } else {
                failSoon([done], lastFailure ?? RedisError(.unavailable, "\(endpoint.address): connect failed"))
            }
        }
    }

    /// Sends one command given as strings (UTF-8).
    public func send(_ arguments: [String], done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        send(arguments.map { Array($0.utf8) }, done: done)
    }

    /// Closes the connection and fails pending commands with `.unavailable`, before it
    /// returns; later commands fail the same way. Idempotent.
    public func close() {
        close(failing: RedisError(.unavailable, "\(endpoint.address): client closed"))
    }

    /// `close()` with the error pending commands fail with (a Sentinel client retiring a
    /// master that stopped being one says so).
    func close(failing error: RedisError) {
        guard phase != .closed else { return }
        phase = .closed
        onFailure = nil
        drop(error)
    }

    // MARK: deadlines

    func deadline() -> ContinuousClock.Instant { .now + .seconds(commandTimeout) }

    /// Arms one timer for the oldest command's deadline. Later commands have later deadlines,
    /// so one timer for the oldest covers all; when it fires early (the oldest was answered)
    /// it re-arms for the new oldest.
    func armCommandTimer() {
        guard commandTimer == nil, case .command(let deadline, _)? = inFlight.first else { return }
        let wait = max(0, Self.seconds(ContinuousClock.now.duration(to: deadline)))
        commandTimer = LoopTimer(loop: loop, seconds: wait) { [weak self] in self?.commandDeadlinePassed() }
    }

    private func commandDeadlinePassed() {
        commandTimer = nil
        guard phase == .ready, case .command(let deadline, _)? = inFlight.first else { return }
        if ContinuousClock.now >= deadline {
            drop(RedisError(.timeout, "\(endpoint.address): no reply within \(commandTimeout) s"))
        } else {
            armCommandTimer()
        }
    }

    /// Completions of commands that fail before a connection could take them: on the next
    /// loop turn, so that `done` never runs inside `send`.
    func failSoon(_ completions: [Completion], _ error: RedisError) {
        guard !completions.isEmpty else { return }
        loop.execute { for done in completions { done(.failure(error)) } }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (whole, fraction) = duration.components
        return Double(whole) + Double(fraction) / 1e18
    }
}
