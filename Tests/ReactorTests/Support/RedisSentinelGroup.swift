import Foundation
import TestSupport

@testable import Reactor

/// A master, optionally a replica of it, and Sentinels monitoring it as `mymaster`, all on
/// loopback ports, for one test; every process is killed and the Sentinels' configuration
/// files (which they rewrite) removed when the group goes away.
final class RedisSentinelGroup {
    static let masterName = "mymaster"

    let master: RedisServerProcess
    let replica: RedisServerProcess?
    private(set) var sentinels: [RedisServerProcess] = []
    let directory: URL
    private let masterPassword: String?

    /// `quorum` Sentinels must agree that the master is down (quorum 2 with one Sentinel: it
    /// never fails over, so it keeps naming the master whatever the master does).
    /// `masterPassword` protects master and replica, `sentinelPassword` the Sentinels.
    init(
        replica withReplica: Bool, sentinels count: Int, quorum: Int = 2, masterPassword: String? = nil,
        sentinelPassword: String? = nil
    ) throws {
        self.masterPassword = masterPassword
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tokengate-sentinel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Full syncs start at once (Redis 7 waits 5 s for more replicas to share a diskless one).
        let auth =
            (masterPassword.map { ["--requirepass", $0, "--masterauth", $0] } ?? []) + [
                "--repl-diskless-sync-delay", "0"
            ]
        master = try RedisServerProcess(auth)
        replica = withReplica ? try RedisServerProcess(auth + ["--replicaof", "127.0.0.1", String(master.port)]) : nil
        for _ in 0..<count {
            sentinels.append(
                try RedisServerProcess { [directory, master] port in
                    var lines = [
                        "port \(port)", "bind 127.0.0.1", "dir \(directory.path)",
                        "sentinel monitor \(Self.masterName) 127.0.0.1 \(master.port) \(quorum)",
                        "sentinel down-after-milliseconds \(Self.masterName) 1000",
                        "sentinel failover-timeout \(Self.masterName) 3000",
                        "sentinel parallel-syncs \(Self.masterName) 1"
                    ]
                    if let masterPassword { lines.append("sentinel auth-pass \(Self.masterName) \(masterPassword)") }
                    if let sentinelPassword { lines.append("requirepass \(sentinelPassword)") }
                    let file = directory.appendingPathComponent("sentinel-\(port).conf").path
                    try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
                    return [file, "--sentinel"]
                })
        }
    }

    deinit {
        for sentinel in sentinels { sentinel.kill() }
        replica?.kill()
        master.kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Waits until the replica (if any) is in sync and every Sentinel sees it and the other
    /// Sentinels, which a failover needs (they learn of each other through the master every
    /// 2 s).
    func waitUntilReady(timeout: Double = 20, sentinelPassword: String? = nil) -> Bool {
        ProcessRunner.waitUntil(timeout: timeout) {
            if let replica {
                let info =
                    (try? ProcessRunner.redisCLI(port: replica.port, password: masterPassword, ["INFO", "replication"]))
                    ?? ""
                guard info.contains("master_link_status:up") else { return false }
            }
            return sentinels.allSatisfy { sentinel in
                guard
                    let info = try? ProcessRunner.redisCLI(
                        port: sentinel.port, password: sentinelPassword,
                        ["SENTINEL", "master", Self.masterName])
                else { return false }
                let fields = info.split(separator: "\n").map(String.init)
                func value(_ key: String) -> String? {
                    fields.firstIndex(of: key).flatMap { $0 + 1 < fields.count ? fields[$0 + 1] : nil }
                }
                return value("num-slaves") == (replica == nil ? "0" : "1")
                    && value("num-other-sentinels") == String(sentinels.count - 1)
            }
        }
    }

    /// The deployment of this group: its Sentinels in order (after `extraSentinelPorts`, say
    /// one nothing listens on), the master's login.
    func settings(
        password: String? = nil, sentinelPassword: String? = nil,
        extraSentinelPorts: [UInt16] = []
    ) -> RedisSentinelSettings {
        let sentinels = (extraSentinelPorts + self.sentinels.map(\.port)).map {
            RedisEndpoint(host: "127.0.0.1", port: $0, password: sentinelPassword)
        }
        return RedisSentinelSettings(sentinels: sentinels, masterName: Self.masterName, password: password)
    }
}
