import Foundation
import TestSupport

@testable import Reactor

/// A three-master Redis Cluster on loopback ports for one test, made as an operator would:
/// three `--cluster-enabled` servers joined by `redis-cli --cluster create`, then waited for
/// until every node reports `cluster_state:ok`, three nodes and every slot assigned. Every process
/// is killed and the nodes' configuration files removed when the group goes away.
final class RedisClusterGroup {
    let nodes: [RedisServerProcess]
    let directory: URL

    init(password: String? = nil) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tokengate-cluster-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let auth = password.map { ["--requirepass", $0, "--masterauth", $0] } ?? []
        // Full coverage off: with a master down the others keep serving their slots (the
        // default refuses every command once a slot has no master).
        nodes = try (0..<3).map { _ in
            try RedisServerProcess { [directory] port in
                RedisServerProcess.standardArguments(port: port) + auth + [
                    "--dir", directory.path, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-\(port).conf",
                    "--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "no"
                ]
            }
        }
        try ProcessRunner.run(
            "/usr/bin/redis-cli",
            ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" }
                + ["--cluster-replicas", "0", "--cluster-yes"]
                + (password.map { ["-a", $0, "--no-auth-warning"] } ?? []),
            timeout: 30)
        let ready = ProcessRunner.waitUntil(timeout: 20) { [nodes] in
            nodes.allSatisfy { node in
                let info = (try? ProcessRunner.redisCLI(port: node.port, password: password, ["CLUSTER", "INFO"])) ?? ""
                return info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3")
                    && info.contains("cluster_slots_assigned:16384")
            }
        }
        guard ready else { throw ProcessRunner.Failure(description: "the cluster did not reach cluster_state:ok") }
    }

    deinit {
        for node in nodes { node.kill() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The node id (`CLUSTER MYID`) of a node.
    func id(of node: RedisServerProcess) throws -> String {
        try ProcessRunner.redisCLI(port: node.port, ["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The node whose port is `port`.
    func node(port: UInt16) -> RedisServerProcess? { nodes.first { $0.port == port } }

    /// The deployment of this cluster, the seeds in order after `extraSeedPorts`.
    func settings(password: String? = nil, extraSeedPorts: [UInt16] = []) -> RedisClusterSettings {
        RedisClusterSettings(
            seeds: (extraSeedPorts + nodes.map(\.port)).map { RedisEndpoint(host: "127.0.0.1", port: $0) },
            password: password)
    }
}
