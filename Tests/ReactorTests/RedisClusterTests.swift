import Foundation
import TestSupport
import Testing

@testable import Reactor

/// `redis+cluster://` against a real three-master Redis Cluster on loopback ports, made per
/// test with `redis-cli --cluster create`.
@Suite("Redis Cluster, real processes", .serialized)
struct RedisClusterTests {
    let h = RedisLoopHarness()

    /// A plain client of one node, to look behind the cluster client's back.
    private func direct(_ node: RedisServerProcess) -> RedisClient {
        RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: node.port))
    }

    @Test func keysSpreadOverEveryNode() throws {
        let cluster = try RedisClusterGroup()
        // The first seed is not running: the map comes from the next one.
        let dead = try RedisServerProcess.freePort()
        let url =
            "redis+cluster://127.0.0.1:\(dead)," + cluster.nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",")
        let redis = Redis(loop: h.loop, deployment: try #require(RedisDeployment(url: url)))
        let keys = (0..<60).map { "key:\($0)" }
        let sets = h.sendAll(redis, keys.map { ["SET", $0, "value of \($0)"] })
        #expect(sets.allSatisfy { $0 == .success(.status("OK")) })
        let gets = h.sendAll(redis, keys.map { ["GET", $0] })
        #expect(gets == keys.map { .success(.bulk("value of \($0)")) })
        #expect(redis.isConnected)
        #expect(redis.clusterClient?.movedCount == 0)

        // Every node holds some of them, each key on the node its slot names.
        var total: Int64 = 0
        for node in cluster.nodes {
            guard case .success(.integer(let count))? = h.send(direct(node), ["DBSIZE"]) else {
                Issue.record("DBSIZE")
                return
            }
            #expect(count > 0)
            total += count
        }
        #expect(total == 60)

        // The client's slots are the server's, hash tags included.
        let probe = direct(cluster.nodes[0])
        for key in keys + [
            "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "{a", "a}{b}", ""
        ] {
            let slot = RedisHashSlot.slot(of: Array(key.utf8))
            #expect(h.send(probe, ["CLUSTER", "KEYSLOT", key]) == .success(.integer(Int64(slot))), "\(key)")
        }
    }

    @Test func hashTaggedKeysShareANode() throws {
        let cluster = try RedisClusterGroup()
        let redis = Redis(loop: h.loop, deployment: .cluster(cluster.settings()))
        let tagged = ["{user:42}:profile", "{user:42}:sessions", "{user:42}:tokens"]
        for key in tagged { #expect(h.send(redis, ["SET", key, "x"]) == .success(.status("OK"))) }
        let slot = RedisHashSlot.slot(of: Array("user:42".utf8))
        let owners = cluster.nodes.filter {
            h.send(direct($0), ["CLUSTER", "COUNTKEYSINSLOT", String(slot)]) == .success(.integer(3))
        }
        #expect(owners.count == 1)
        // Multi-key commands in one slot run; across slots they are refused unsent.
        #expect(
            h.send(redis, ["EVAL", "return redis.call('MGET', KEYS[1], KEYS[2])", "2", tagged[0], tagged[1]])
                == .success(.array([.bulk("x"), .bulk("x")])))
        guard case .failure(let cross)? = h.send(redis, ["DEL", tagged[0], "other-key"]) else {
            Issue.record("CROSSSLOT")
            return
        }
        #expect(cross.kind == .protocolError)
        #expect(cross.message.contains("CROSSSLOT"))
        #expect(h.send(redis, ["EXISTS", tagged[0]]) == .success(.integer(1)))
        #expect(h.send(redis, ["DEL"] + tagged) == .success(.integer(3)))
        // Unknown commands need their keys named; transactions cannot be routed.
        #expect(h.send(redis, ["HSET", "h", "f", "v"])?.failureKind == .protocolError)
        #expect(h.send(redis, ["HSET", "h", "f", "v"], keys: [1]) == .success(.integer(1)))
        #expect(h.send(redis, ["MULTI"], keys: [])?.failureKind == .protocolError)
    }

    @Test func migratingSlotGivesAskThenMoved() throws {
        let cluster = try RedisClusterGroup()
        let redis = Redis(loop: h.loop, deployment: .cluster(cluster.settings()))
        let client = try #require(redis.clusterClient)
        let key = "{migrating}:a"
        let newKey = "{migrating}:b"
        #expect(h.send(redis, ["SET", key, "before"]) == .success(.status("OK")))
        let slot = RedisHashSlot.slot(of: Array("migrating".utf8))
        let source = try #require(client.map.node(for: slot).flatMap { cluster.node(port: $0.port) })
        let target = try #require(cluster.nodes.first { $0.port != source.port })
        let (sourceID, targetID) = (try cluster.id(of: source), try cluster.id(of: target))

        // Mid-migration: the key has moved, the slot not yet. The source answers -ASK.
        #expect(
            h.send(direct(target), ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID])
                == .success(.status("OK")))
        #expect(
            h.send(direct(source), ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID])
                == .success(.status("OK")))
        #expect(
            h.send(direct(source), ["MIGRATE", "127.0.0.1", String(target.port), key, "0", "5000"])
                == .success(.status("OK")))
        #expect(h.send(redis, ["GET", key]) == .success(.bulk("before")))
        #expect(client.askCount == 1)
        #expect(h.send(redis, ["SET", newKey, "during"]) == .success(.status("OK")))
        #expect(client.askCount == 2)
        #expect(client.movedCount == 0)
        #expect(client.map.node(for: slot)?.port == source.port)

        // Migration done: the slot is the target's, the source answers -MOVED once.
        for node in cluster.nodes {
            #expect(
                h.send(direct(node), ["CLUSTER", "SETSLOT", String(slot), "NODE", targetID]) == .success(.status("OK")))
        }
        #expect(h.send(redis, ["GET", newKey]) == .success(.bulk("during")))
        #expect(client.movedCount == 1)
        #expect(client.map.node(for: slot)?.port == target.port)
        #expect(h.send(redis, ["GET", key]) == .success(.bulk("before")))
        #expect(client.movedCount == 1)
        #expect(h.send(direct(target), ["GET", key]) == .success(.bulk("before")))
    }

    @Test func aKilledNodeFailsOnlyItsSlots() throws {
        let cluster = try RedisClusterGroup()
        let connectTimeout = 0.5
        let commandTimeout = 1.0
        let redis = Redis(
            loop: h.loop, deployment: .cluster(cluster.settings()), connectTimeout: connectTimeout,
            commandTimeout: commandTimeout)
        let client = try #require(redis.clusterClient)
        let keys = (0..<30).map { "k\($0)" }
        #expect(h.sendAll(redis, keys.map { ["SET", $0, $0] }).allSatisfy { $0 == .success(.status("OK")) })
        let victim = cluster.nodes[1]
        let onVictim = Set(
            keys.filter { client.map.node(for: RedisHashSlot.slot(of: Array($0.utf8)))?.port == victim.port })
        #expect(!onVictim.isEmpty && onVictim.count < keys.count)

        // Commands in flight when it dies, then rounds of reads: the victim's keys fail
        // .unavailable, quickly, the others answer.
        victim.kill()
        for _ in 0..<5 {
            let started = Date()
            let replies = h.sendAll(redis, keys.map { ["GET", $0] }, limit: 10)
            #expect(replies.count == keys.count)
            #expect(Date().timeIntervalSince(started) < connectTimeout + commandTimeout + 0.5)
            for (key, reply) in zip(keys, replies) {
                if onVictim.contains(key) {
                    #expect(reply.failureKind == .unavailable, "\(key): \(reply)")
                } else {
                    #expect(reply == .success(.bulk(key)), "\(key)")
                }
            }
            h.wait(0.2)
        }
    }
}
