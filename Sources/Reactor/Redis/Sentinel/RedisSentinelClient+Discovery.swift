/// Finding the master: each Sentinel in turn (`SENTINEL get-master-addr-by-name`), the one
/// that answered last first; then `ROLE` on the named server, which must say `master` before
/// any command goes to it (a Sentinel that has not seen the failover yet names the old
/// master, which may be back as a replica). And the periodic check that the Sentinels still
/// name the master in use.
extension RedisSentinelClient {
    typealias Address = (host: String, port: UInt16)

    func startDiscovery() {
        discovery += 1
        state = .discovering
        checkTimer = nil
        ask(sentinel: preferredSentinel, remaining: settings.sentinels.count, failures: [], discovery: discovery)
    }

    private func ask(sentinel index: Int, remaining: Int, failures: [String], discovery id: Int) {
        guard remaining > 0 else {
            return discoveryFailed(failures.isEmpty ? "no Sentinel configured" : failures.joined(separator: "; "))
        }
        let sentinel = sentinelClient(index)
        queryMaster(sentinel) { [weak self] answer in
            guard let self, self.discovery == id, case .discovering = self.state else { return }
            switch answer {
            case .success(let address):
                self.preferredSentinel = index
                self.verify(address, discovery: id)
            case .failure(let error):
                self.ask(
                    sentinel: (index + 1) % self.settings.sentinels.count, remaining: remaining - 1,
                    failures: failures + ["Sentinel \(sentinel.endpoint.address): \(error.message)"], discovery: id)
            }
        }
    }

    /// One Sentinel's answer for the master's address.
    func queryMaster(_ sentinel: RedisClient, _ done: @escaping (Result<Address, RedisError>) -> Void) {
        sentinel.send(["SENTINEL", "get-master-addr-by-name", settings.masterName]) {
            [masterName = settings.masterName] result in
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(.array(let items)) where items.count == 2:
                guard case .bulk(let host) = items[0], !host.isEmpty, case .bulk(let portText) = items[1],
                    let port = UInt16(String(decoding: portText, as: UTF8.self)), port > 0
                else {
                    return done(.failure(RedisError(.protocolError, "malformed master address")))
                }
                done(.success((String(decoding: host, as: UTF8.self), port)))
            case .success(.null):
                done(.failure(RedisError(.unavailable, "does not monitor a master named \(masterName)")))
            case .success(.error(let message)):
                done(.failure(RedisError(.unavailable, message)))
            case .success:
                done(.failure(RedisError(.protocolError, "unexpected reply to SENTINEL get-master-addr-by-name")))
            }
        }
    }

    /// Connects to the named server and asks its `ROLE`; commands wait until it says master.
    private func verify(_ address: Address, discovery id: Int) {
        let candidate = RedisClient(
            loop: loop, endpoint: settings.master(host: address.host, port: address.port),
            connectTimeout: connectTimeout, commandTimeout: commandTimeout, maxPending: maxPending)
        // The completion holds the candidate until ROLE is answered (it always is, once).
        candidate.send(["ROLE"]) { [weak self] result in
            guard let self, self.discovery == id, case .discovering = self.state else { return candidate.close() }
            if case .success(.array(let items)) = result, items.first == .bulk(Array("master".utf8)) {
                return self.promote(candidate)
            }
            candidate.close()
            let role: String
            switch result {
            case .success(.array(let items)):
                if case .bulk(let name)? = items.first {
                    role = "role \(String(decoding: name, as: UTF8.self))"
                } else {
                    role = "no role"
                }
            case .success(let reply): role = "answered ROLE with \(reply)"
            case .failure(let error): role = error.message
            }
            self.discoveryFailed("the Sentinels name \(candidate.endpoint.address), which is not a master (\(role))")
        }
    }

    private func promote(_ master: RedisClient) {
        state = .ready(master)
        backoff.reset()
        retryAt = nil
        lastFailure = nil
        // Before the pending commands fail: a completion that sends again starts a discovery.
        master.onFailure = { [weak self, weak master] _ in
            if let self, let master { self.detach(master) }
        }
        for entry in waiting.removeAll() { send(entry.command, to: master, done: entry.done) }
        scheduleCheck()
    }

    private func discoveryFailed(_ why: String) {
        state = .idle
        retryAt = .now + .seconds(backoff.next())
        let error = RedisError(.unavailable, "no master for \(settings.masterName): \(why)")
        lastFailure = error
        waiting.failAll(error)
    }

    private func scheduleCheck() {
        guard checkInterval > 0, !settings.sentinels.isEmpty else { return }
        checkTimer = LoopTimer(loop: loop, seconds: checkInterval) { [weak self] in self?.check() }
    }

    /// Asks one Sentinel which server is master; another than the one in use is switched to
    /// now, its pending commands failing with `.unavailable`. A Sentinel that does not
    /// answer is passed over for the next check.
    private func check() {
        checkTimer = nil
        guard let master else { return }
        let index = preferredSentinel
        queryMaster(sentinelClient(index)) { [weak self, weak master] answer in
            guard let self, let master, self.master === master else { return }
            switch answer {
            case .success(let address)
            where address.host != master.endpoint.host || address.port != master.endpoint.port:
                let error = RedisError(
                    .unavailable,
                    "the Sentinels name \(address.host):\(address.port) as master of "
                        + "\(self.settings.masterName) now, not \(master.endpoint.address)")
                self.detach(master)
                master.close(failing: error)
                if case .idle = self.state { self.startDiscovery() }
            case .success:
                self.scheduleCheck()
            case .failure:
                self.preferredSentinel = (index + 1) % self.settings.sentinels.count
                self.scheduleCheck()
            }
        }
    }

    private func sentinelClient(_ index: Int) -> RedisClient {
        if let client = sentinelClients[index] { return client }
        let client = RedisClient(
            loop: loop, endpoint: settings.sentinels[index], connectTimeout: connectTimeout,
            commandTimeout: commandTimeout, maxPending: 64)
        sentinelClients[index] = client
        return client
    }
}
