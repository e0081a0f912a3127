import Foundation
import Logging
import Reactor

/// The upstreams' secret files (`credentials.header.value_file`), read at start and on
/// SIGHUP, and polled every half second: a rotated secret (new bytes, or a new file renamed
/// over it, as Kubernetes swaps a mounted secret) is read and sent to every worker, so
/// requests carry the new value within a second, without a restart. A file that is gone,
/// unreadable or not a field value keeps the last good value, with a log line that never
/// quotes the secret; the upstream, which holds the secret, decides whether that still
/// passes. Main loop.
final class UpstreamSecretService {
    private let log: Logger
    private var workers: [Worker] = []
    private var files: [String: (path: String, stamp: FileStamp)] = [:]
    private var timer: LoopTimer?
    private var loads: [String: Int] = [:]
    private var refusals: [String: Int] = [:]

    init(log: Logger) { self.log = log }

    func attach(_ workers: [Worker]) { self.workers = workers }

    /// The secrets of `config` (start, SIGHUP). The config's parse read each file; it is read
    /// again here, after its stamp, so a change in between is not missed.
    func apply(_ config: GatewayConfig) {
        var next: [String: (path: String, stamp: FileStamp)] = [:]
        for (name, upstream) in config.upstreams {
            guard case .header(let header) = upstream.credentials else { continue }
            next[name] = (header.file, FileStamp(path: header.file))
            publish(name, read(name, header.file) ?? header.value)
        }
        for name in files.keys where next[name] == nil { publish(name, nil) }
        files = next
    }

    /// Polls the files from now on.
    func watch(loop: EventLoop) {
        timer = LoopTimer(loop: loop, seconds: APIKeyService.pollInterval, repeating: true) { [weak self] in
            self?.poll()
        }
    }

    private func poll() {
        for (name, current) in files {
            let stamp = FileStamp(path: current.path)
            guard stamp != current.stamp else { continue }
            files[name]?.stamp = stamp
            if let value = read(name, current.path) { publish(name, value) }
        }
    }

    private func read(_ upstream: String, _ path: String) -> String? {
        switch UpstreamSecretFile.read(path) {
        case .success(let value):
            loads[upstream, default: 0] += 1
            log.info("upstream secret loaded", metadata: ["upstream": .string(upstream), "file": .string(path)])
            return value
        case .failure(let problem):
            refusals[upstream, default: 0] += 1
            log.error(
                "upstream secret file refused; the last good value stays",
                metadata: ["upstream": .string(upstream), "problem": .string(problem.description)])
            return nil
        }
    }

    private func publish(_ upstream: String, _ value: String?) {
        for w in workers { w.loop.execute { w.services.upstreamCredentials.update(secret: value, for: upstream) } }
    }

    var metricsText: String {
        guard !files.isEmpty else { return "" }
        var out = PrometheusText()
        let names = files.keys.sorted()
        out.labelled(
            "tokengate_upstream_secret_loads_total", .counter, help: "Upstream secret files read and taken.",
            label: "upstream", names.map { ($0, loads[$0] ?? 0) })
        out.labelled(
            "tokengate_upstream_secret_refusals_total", .counter,
            help: "Upstream secret files that could not be read or were no field value (the last good value stayed).",
            label: "upstream", names.map { ($0, refusals[$0] ?? 0) })
        return out.text
    }
}
