/// Loading the slot map: `CLUSTER SLOTS` from the map's masters, then the seeds, in turn,
/// one load at a time.
extension RedisClusterClient {
    /// A fresh map, unless one is being loaded or the last load was too recent (or failed
    /// and is backing off).
    func requestRefresh() {
        guard !closed, !loading else { return }
        if let refreshAfter, ContinuousClock.now < refreshAfter { return }
        refresh()
    }

    func refresh() {
        loading = true
        load += 1
        var candidates = map.nodes
        for seed in settings.seeds.map({ settings.node(host: $0.host, port: $0.port) })
        where !candidates.contains(where: { $0.address == seed.address }) {
            candidates.append(seed)
        }
        ask(candidates, 0, failures: [], load: load)
    }

    private func ask(_ candidates: [RedisEndpoint], _ index: Int, failures: [String], load id: Int) {
        guard index < candidates.count else {
            return loadFailed(failures.isEmpty ? "no seed node configured" : failures.joined(separator: "; "))
        }
        let node = candidates[index]
        client(for: node).send(["CLUSTER", "SLOTS"]) { [weak self] result in
            guard let self, self.load == id, self.loading, !self.closed else { return }
            if case .success(let reply) = result,
                let map = RedisSlotMap(clusterSlots: reply, answeredBy: node, node: self.settings.node)
            {
                return self.loaded(map)
            }
            let why: String
            switch result {
            case .failure(let error): why = error.message
            case .success(.error(let message)): why = message
            case .success: why = "CLUSTER SLOTS answered with no slot"
            }
            self.ask(candidates, index + 1, failures: failures + ["\(node.address): \(why)"], load: id)
        }
    }

    private func loaded(_ fresh: RedisSlotMap) {
        loading = false
        backoff.reset()
        lastFailure = nil
        refreshAfter = .now + .seconds(minimumRefreshInterval)
        map = fresh
        // Connections to nodes that serve no slot now (a seed known by another name, a
        // master demoted or removed) are closed; their pending commands fail.
        let serving = Set(map.nodes.map(\.address))
        for (address, client) in clients where !serving.contains(address) {
            clients[address] = nil
            client.close()
        }
        for entry in waiting.removeAll() { route(entry.command, redirected: false, done: entry.done) }
    }

    private func loadFailed(_ why: String) {
        loading = false
        refreshAfter = .now + .seconds(backoff.next())
        let error = RedisError(.unavailable, "no cluster slot map: \(why)")
        lastFailure = error
        // With a map, commands never wait: they go by the old one.
        waiting.failAll(error)
    }
}
