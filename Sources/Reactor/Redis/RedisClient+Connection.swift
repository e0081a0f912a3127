/// The client's side of its connection: connect, handshake, reply matching, and what a
/// failure does to pending commands.
extension RedisClient: RedisConnectionDelegate {
    func startConnect() {
        let tls: TLSClientContext?
        do throws(RedisError) {
            tls = try tlsContextForConnect()
        } catch {
            return drop(error)
        }
        let conn = RedisConnection(loop: loop, endpoint: endpoint, tls: tls)
        conn.delegate = self
        connection = conn
        phase = .connecting
        connectTimer = LoopTimer(loop: loop, seconds: connectTimeout) { [weak self] in self?.connectDeadlinePassed() }
        do throws(RedisError) {
            try conn.connect()
        } catch {
            // Unless the delegate already heard of it (and dropped the connection).
            if connection === conn { drop(error) }
        }
    }

    /// The TLS context of a `rediss://` endpoint, made once it can be (a missing CA file may
    /// appear later, so a failure is not remembered); nil for plain TCP.
    private func tlsContextForConnect() throws(RedisError) -> TLSClientContext? {
        guard let options = endpoint.tls else { return nil }
        if let tlsContext { return tlsContext }
        do {
            let context = try TLSClientContext(
                caFile: options.caFile, insecureSkipTLSVerify: options.insecureSkipTLSVerify)
            tlsContext = context
            return context
        } catch {
            throw RedisError(.unavailable, "\(endpoint.address): \(error.description)")
        }
    }

    private func connectDeadlinePassed() {
        connectTimer = nil
        guard phase == .connecting else { return }
        drop(RedisError(.unavailable, "\(endpoint.address): no connection and handshake within \(connectTimeout) s"))
    }

    func redisConnectionDidConnect(_ conn: RedisConnection) {
        guard conn === connection, phase == .connecting else { return }
        var steps: [(name: String, arguments: [[UInt8]])] = []
        if let password = endpoint.password {
            let user = endpoint.username.map { [Array($0.utf8)] } ?? []
            steps.append(("AUTH", [Array("AUTH".utf8)] + user + [Array(password.utf8)]))
        }
        if endpoint.database != 0 {
            steps.append(("SELECT \(endpoint.database)", [Array("SELECT".utf8), Array(String(endpoint.database).utf8)]))
        }
        // The handshake goes out alone: a command pipelined behind a failed AUTH or SELECT
        // would run as the wrong user or in the wrong database.
        for step in steps {
            do throws(RedisError) {
                guard conn.write(try RedisCommand.encode(step.arguments)) else {
                    return drop(RedisError(.unavailable, "\(endpoint.address): cannot write \(step.name)"))
                }
            } catch {
                return drop(RedisError(.unavailable, "\(endpoint.address): \(error.message)"))
            }
            inFlight.append(.handshake(step: step.name))
        }
        if steps.isEmpty { handshakeDone() }
    }

    func redisConnection(_ conn: RedisConnection, didReceive reply: RedisReply) {
        guard conn === connection else { return }
        guard let sent = inFlight.popFirst() else {
            return drop(RedisError(.protocolError, "\(endpoint.address): a reply came with no command waiting for it"))
        }
        switch sent {
        case .handshake(let step):
            if case .error(let message) = reply {
                // The server's message names the failure (WRONGPASS, NOAUTH…), never the password.
                drop(RedisError(.unavailable, "\(endpoint.address): \(step) rejected: \(message)"))
            } else if inFlight.isEmpty {
                handshakeDone()
            }
        case .command(_, let done):
            done(.success(reply))
        }
    }

    func redisConnection(_ conn: RedisConnection, didFail error: RedisError) {
        guard conn === connection else { return }
        drop(error)
    }

    private func handshakeDone() {
        phase = .ready
        backoff.reset()
        retryAt = nil
        connectTimer = nil
        guard let conn = connection else { return }
        // All are in flight before the first write, so a failed write fails every one of them.
        let waiting = queued.removeAll()
        let sentDeadline = deadline()
        for command in waiting { inFlight.append(.command(deadline: sentDeadline, done: command.done)) }
        for command in waiting where !conn.write(command.bytes) {
            return drop(RedisError(.unavailable, "\(endpoint.address): cannot write to the connection"))
        }
        armCommandTimer()
    }

    /// Drops the connection and fails every pending command with `error`; unless the client
    /// was closed, the next connect waits for the backoff and `onFailure` hears of it. State
    /// is settled before `onFailure` and any completion run, so a completion that sends again
    /// sees the backoff, not a dead connection. `soon` defers the completions to the next loop
    /// turn (inside `send`).
    func drop(_ error: RedisError, soon: Bool = false) {
        connectTimer = nil
        commandTimer = nil
        if let conn = connection {
            connection = nil
            conn.delegate = nil
            conn.close()
        }
        let failed = phase != .closed
        if failed {
            phase = .idle
            retryAt = .now + .seconds(backoff.next())
            lastFailure = error
        }
        var completions: [Completion] = []
        for sent in inFlight.removeAll() {
            if case .command(_, let done) = sent { completions.append(done) }
        }
        completions += queued.removeAll().map(\.done)
        if failed { onFailure?(error) }
        if soon {
            failSoon(completions, error)
        } else {
            for done in completions { done(.failure(error)) }
        }
    }
}
