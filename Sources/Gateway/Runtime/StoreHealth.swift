import Foundation
import Reactor

/// Whether the shared store answers, asked from the main loop every couple of seconds
/// (`PING`, on a connection of its own): `/readyz` says not ready while it does not — the
/// requests that need it are failing closed with 503 meanwhile — and the metrics say it.
/// The status page also shows the round trip of the last `PING` and the server's `ROLE`.
final class StoreHealth {
    private let client: Redis
    private var timer: LoopTimer?
    private(set) var up = false
    private(set) var lastError: String? = "not checked yet"
    /// Seconds the last answered `PING` took.
    private(set) var latency: Double?
    /// The first word of `ROLE` (`master`, `slave`); nil if the server refuses the command
    /// (an ACL may forbid it) or never answered.
    private(set) var role: String?
    /// Wall-clock seconds of the last answer or failure.
    private(set) var checkedAt: Double?
    private var inFlight = false
    private let wallClock: any WallClock

    init(loop: EventLoop, deployment: RedisDeployment, interval: Double = 2, wallClock: any WallClock = SystemClock()) {
        client = Redis(
            loop: loop, deployment: deployment, connectTimeout: CallBounds.redis.connect,
            commandTimeout: CallBounds.redis.total)
        self.wallClock = wallClock
        timer = LoopTimer(loop: loop, seconds: interval, repeating: true) { [weak self] in self?.check() }
        check()
    }

    /// The deployment as a URL with every password masked.
    var deployment: String { client.deployment.description }

    private func check() {
        guard !inFlight else { return }
        inFlight = true
        let start = Self.monotonic()
        client.send(["PING"]) { [weak self] result in
            guard let self else { return }
            self.inFlight = false
            self.checkedAt = self.wallClock.now
            switch result {
            case .success(.status("PONG")):
                self.up = true
                self.lastError = nil
                self.latency = Self.monotonic() - start
                self.askRole()
            case .success(let other):
                self.up = false
                self.lastError = "unexpected reply \(other)"
            case .failure(let e):
                self.up = false
                self.lastError = e.description
            }
        }
    }

    private func askRole() {
        // ROLE has no key (any node of a cluster answers for itself).
        client.send(["ROLE"], keys: []) { [weak self] result in
            guard let self else { return }
            if case .success(.array(let parts)) = result, case .bulk(let word)? = parts.first {
                self.role = String(decoding: word, as: UTF8.self)
            } else {
                self.role = nil
            }
        }
    }

    private static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    var metricsText: String {
        var out = PrometheusText()
        out.single("tokengate_store_up", .gauge, help: "Whether the shared store (Redis) answers.", up ? 1 : 0)
        return out.text
    }
}
