import Foundation
import Reactor

/// Whether the shared store answers, asked from the main loop every couple of seconds
/// (`PING`, on a connection of its own): `/readyz` says not ready while it does not — the
/// requests that need it are failing closed with 503 meanwhile — and the metrics say it.
final class StoreHealth {
    private let client: Redis
    private var timer: LoopTimer?
    private(set) var up = false
    private(set) var lastError: String? = "not checked yet"
    private var inFlight = false

    init(loop: EventLoop, deployment: RedisDeployment, interval: Double = 2) {
        client = Redis(
            loop: loop, deployment: deployment, connectTimeout: CallBounds.redis.connect,
            commandTimeout: CallBounds.redis.total)
        timer = LoopTimer(loop: loop, seconds: interval, repeating: true) { [weak self] in self?.check() }
        check()
    }

    private func check() {
        guard !inFlight else { return }
        inFlight = true
        client.send(["PING"]) { [weak self] result in
            guard let self else { return }
            self.inFlight = false
            switch result {
            case .success(.status("PONG")):
                self.up = true
                self.lastError = nil
            case .success(let other):
                self.up = false
                self.lastError = "unexpected reply \(other)"
            case .failure(let e):
                self.up = false
                self.lastError = e.description
            }
        }
    }

    var metricsText: String {
        var out = PrometheusText()
        out.single("tokengate_store_up", .gauge, help: "Whether the shared store (Redis) answers.", up ? 1 : 0)
        return out.text
    }
}
