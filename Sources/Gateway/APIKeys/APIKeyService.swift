import Foundation
import Logging
import Reactor

/// Each key set's table as one worker holds it: replaced whole when the file changes (the
/// main loop's `APIKeyService` publishes it), so a request reads one table from start to
/// end, and a request in flight when the file changes keeps the verdict it had.
final class APIKeyTables: ModuleService {
    private(set) var tables: [String: APIKeyTable] = [:]
    /// When each key (by id, per set) last admitted a request on this worker.
    private(set) var status = APIKeyUse()
    /// Keys presented, by set and outcome.
    private(set) var metrics = APIKeyMetrics()

    subscript(set: String) -> APIKeyTable? { tables[set] }

    func update(_ set: String, _ table: APIKeyTable?) {
        tables[set] = table
        if table == nil { status.lastUse[set] = nil }
    }

    func used(_ set: String, id: String, at now: Double) {
        status.lastUse[set, default: [:]][id] = now
    }

    func record(set: String, outcome: String) { metrics.record(set: set, outcome: outcome) }

    /// The tables come from the main loop's `APIKeyService`, not from the config.
    func apply(_ config: GatewayConfig) {}
}

/// The key sets' files, read at start and on SIGHUP, and polled every half second: a
/// changed file (new bytes, or a new file renamed over it) is read and its table sent to
/// every worker, so a new key passes and a revoked one fails within a second, without a
/// restart. A file that does not parse keeps the last good table, with a log line naming
/// each problem's line and a count in `tokengate_api_key_file_refusals_total`. Main loop.
final class APIKeyService: ModuleMain {
    private let log: Logger
    private var workers: [Worker] = []
    private var sets: [String: (config: APIKeySetConfig, stamp: FileStamp, entries: [APIKeyEntry])] = [:]
    private var timer: LoopTimer?
    private var loads: [String: Int] = [:]
    private var refusals: [String: Int] = [:]

    /// How often the files are looked at.
    static let pollInterval = 0.5

    init(log: Logger) { self.log = log }

    func attach(_ workers: [Worker]) { self.workers = workers }

    /// The sets of `config` (start, SIGHUP). The config's parse read each file; it is read
    /// again here, after its stamp, so a change in between is not missed.
    func apply(_ config: GatewayConfig) {
        for name in sets.keys where config.apiKeySets[name] == nil {
            sets[name] = nil
            publish(name, nil)
        }
        for (name, set) in config.apiKeySets {
            let stamp = FileStamp(path: set.file)
            let entries = read(set) ?? set.entries
            sets[name] = (set, stamp, entries)
            publish(name, APIKeyTable(entries, set: name))
        }
    }

    /// Polls the files from now on.
    func watch(loop: EventLoop) {
        timer = LoopTimer(loop: loop, seconds: Self.pollInterval, repeating: true) { [weak self] in self?.poll() }
    }

    private func poll() {
        for (name, current) in sets {
            let stamp = FileStamp(path: current.config.file)
            guard stamp != current.stamp else { continue }
            sets[name]?.stamp = stamp
            guard let entries = read(current.config) else { continue }
            sets[name]?.entries = entries
            publish(name, APIKeyTable(entries, set: name))
        }
    }

    /// The file's entries, or nil (logged and counted) when it cannot be read or parsed. A
    /// file that is gone revokes every key of the set (fails closed) until it is back.
    private func read(_ set: APIKeySetConfig) -> [APIKeyEntry]? {
        if !FileManager.default.fileExists(atPath: set.file) {
            refused(set, ["\(set.file) is gone: every key of the set fails until it is back"])
            return []
        }
        guard let data = FileManager.default.contents(atPath: set.file), let text = String(data: data, encoding: .utf8)
        else {
            refused(set, ["cannot read \(set.file)"])
            return nil
        }
        switch APIKeyFile.parse(text) {
        case .success(let entries):
            loads[set.name, default: 0] += 1
            log.info(
                "API keys loaded",
                metadata: [
                    "set": .string(set.name), "keys": .stringConvertible(entries.count), "file": .string(set.file)
                ])
            return entries
        case .failure(let problems):
            refused(set, problems.all.map(\.description))
            return nil
        }
    }

    private func refused(_ set: APIKeySetConfig, _ problems: [String]) {
        refusals[set.name, default: 0] += 1
        log.error(
            "API key file refused; the last good keys stay",
            metadata: [
                "set": .string(set.name), "file": .string(set.file), "problems": .array(problems.map { .string($0) })
            ])
    }

    private func publish(_ name: String, _ table: APIKeyTable?) {
        for w in workers { w.loop.execute { w.services.apiKeys.update(name, table) } }
    }

    /// Each set's keys as the status page lists them: id, identity, expiry (never a digest).
    var keys: [String: [APIKeyEntry]] { sets.mapValues(\.entries) }

    var metricsText: String {
        guard !sets.isEmpty else { return "" }
        var out = PrometheusText()
        let names = sets.keys.sorted()
        out.labelled(
            "tokengate_api_key_file_loads_total", .counter, help: "Key files read and taken.", label: "set",
            names.map { ($0, loads[$0] ?? 0) })
        out.labelled(
            "tokengate_api_key_file_refusals_total", .counter,
            help: "Key files that could not be read or parsed (the last good keys stayed).", label: "set",
            names.map { ($0, refusals[$0] ?? 0) })
        out.labelled(
            "tokengate_api_keys", .gauge, help: "Keys in each set's table.", label: "set",
            names.map { ($0, sets[$0]?.entries.count ?? 0) })
        return out.text
    }
}
