import Foundation
import TestSupport
import Testing

@testable import Reactor

/// `redis+sentinel://` against real processes on loopback ports: redis-server masters and
/// replicas, and `redis-server --sentinel` processes monitoring them.
@Suite("Redis through Sentinel, real processes", .serialized)
struct RedisSentinelTests {
    let h = RedisLoopHarness()

    /// One command of the failover run: when it was sent, how long it took, how it ended.
    private struct Outcome {
        let sent: Date
        var elapsed: Double?
        var result: RedisLoopHarness.Reply?
    }

    @Test func failoverIsFollowed() throws {
        let group = try RedisSentinelGroup(replica: true, sentinels: 3)
        #expect(group.waitUntilReady())
        let connectTimeout = 0.5
        let commandTimeout = 1.0
        let redis = Redis(
            loop: h.loop, deployment: .sentinel(group.settings()), connectTimeout: connectTimeout,
            commandTimeout: commandTimeout)
        let sentinel = try #require(redis.sentinelClient)
        #expect(h.send(redis, ["SET", "before", "v0"]) == .success(.status("OK")))
        #expect(sentinel.master?.endpoint.port == group.master.port)
        // Acknowledged by the replica before the master dies: it must survive the failover.
        guard case .success(.integer(let acks))? = h.send(redis, ["WAIT", "1", "500"], keys: []) else {
            Issue.record("WAIT")
            return
        }
        #expect(acks == 1)

        // A write every 20 ms; the master is killed after 0.3 s; writes go on until one has
        // succeeded on the promoted replica, for at most 15 s.
        let replicaPort = try #require(group.replica?.port)
        var outcomes: [Outcome] = []
        var killedAt: Date?
        var recoveredAt: Date?
        let finished = h.run(limit: 20) { finish in
            func tick(_ i: Int) {
                let index = outcomes.count
                outcomes.append(Outcome(sent: Date()))
                redis.send(["SET", "k\(i)", "v\(i)"]) { result in
                    outcomes[index].elapsed = Date().timeIntervalSince(outcomes[index].sent)
                    outcomes[index].result = result
                    if case .success(.status("OK")) = result, killedAt != nil, recoveredAt == nil,
                        sentinel.master?.endpoint.port == replicaPort
                    {
                        recoveredAt = Date()
                    }
                }
                if i == 15 {
                    group.master.kill()
                    killedAt = Date()
                }
                if recoveredAt != nil || Date().timeIntervalSince(outcomes[0].sent) > 15 {
                    // Every completion in before finishing.
                    h.loop.schedule(after: connectTimeout + commandTimeout + 0.5, finish)
                } else {
                    h.loop.schedule(after: 0.02) { tick(i + 1) }
                }
            }
            tick(0)
        }
        #expect(finished)
        let killed = try #require(killedAt)
        let recovered = try #require(recoveredAt, "no write succeeded on the promoted replica")
        #expect(recovered.timeIntervalSince(killed) < 10)
        // Every command ended, in a reply or .unavailable, within the bound (plus slack for a
        // loaded machine); none hung.
        #expect(outcomes.allSatisfy { $0.result != nil })
        #expect(outcomes.allSatisfy { ($0.elapsed ?? .infinity) <= connectTimeout + commandTimeout + 0.5 })
        let failures = outcomes.compactMap { outcome -> RedisError? in
            if case .failure(let e)? = outcome.result { return e }
            return nil
        }
        #expect(failures.allSatisfy { $0.kind == .unavailable }, "\(failures.filter { $0.kind != .unavailable })")
        #expect(sentinel.master?.endpoint.port == replicaPort)
        #expect(h.send(redis, ["GET", "before"]) == .success(.bulk("v0")))
        #expect(h.send(redis, ["SET", "after", "v1"]) == .success(.status("OK")))
        // The write landed on the promoted replica, which is a master now.
        let direct = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: replicaPort))
        #expect(h.send(direct, ["GET", "after"]) == .success(.bulk("v1")))
        guard case .success(.array(let role))? = h.send(direct, ["ROLE"]) else {
            Issue.record("ROLE")
            return
        }
        #expect(role.first == .bulk("master"))
    }

    @Test func readonlyMasterIsLeftAndARoleOtherThanMasterRefused() throws {
        // One Sentinel with quorum 2 never fails over: it keeps naming the master whatever
        // the master becomes, so the client's own checks are what is tested.
        let group = try RedisSentinelGroup(replica: false, sentinels: 1, masterPassword: "mpw", sentinelPassword: "spw")
        let other = try RedisServerProcess(["--requirepass", "mpw"])
        let deadSentinel = try RedisServerProcess.freePort()
        let url =
            "redis+sentinel://:mpw@127.0.0.1:\(deadSentinel),127.0.0.1:\(group.sentinels[0].port)/"
            + "\(RedisSentinelGroup.masterName)?sentinel_password=spw"
        let deployment = try #require(RedisDeployment(url: url))
        #expect(
            deployment
                == .sentinel(
                    group.settings(password: "mpw", sentinelPassword: "spw", extraSentinelPorts: [deadSentinel])))
        let redis = Redis(loop: h.loop, deployment: deployment)
        let sentinel = try #require(redis.sentinelClient)
        sentinel.checkInterval = 0
        // The first Sentinel is not running: the second answers.
        #expect(h.send(redis, ["SET", "a", "1"]) == .success(.status("OK")))
        #expect(sentinel.master?.endpoint.port == group.master.port)

        // The master becomes a replica behind the Sentinel's back.
        let admin = RedisClient(
            loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: group.master.port, password: "mpw"))
        #expect(h.send(admin, ["REPLICAOF", "127.0.0.1", String(other.port)]) == .success(.status("OK")))
        guard case .failure(let readonly)? = h.send(redis, ["SET", "b", "2"]) else {
            Issue.record("READONLY must fail")
            return
        }
        #expect(readonly.kind == .unavailable)
        #expect(readonly.message.contains("READONLY"))
        #expect(sentinel.master == nil)
        // Asked again, the Sentinel names the same server, whose ROLE is not master.
        guard case .failure(let role)? = h.send(redis, ["SET", "c", "3"]) else {
            Issue.record("a replica must be refused")
            return
        }
        #expect(role.kind == .unavailable)
        #expect(role.message.contains("not a master (role slave)"), "\(role.message)")
        #expect(!role.message.contains("mpw") && !role.message.contains("spw"))

        // Master again: the client comes back after its backoff.
        #expect(h.send(admin, ["REPLICAOF", "NO", "ONE"]) == .success(.status("OK")))
        let recovered = h.run(limit: 10) { finish in
            func attempt() {
                redis.send(["SET", "d", "4"]) { result in
                    if case .success(.status("OK")) = result { finish() } else { h.loop.schedule(after: 0.05, attempt) }
                }
            }
            attempt()
        }
        #expect(recovered)
        #expect(h.send(admin, ["GET", "d"]) == .success(.bulk("4")))
        // Neither refused write was sent again anywhere.
        #expect(h.send(admin, ["EXISTS", "b", "c"]) == .success(.integer(0)))
    }

    @Test func periodicCheckFollowsTheSentinels() throws {
        // The Sentinel is pointed at another master; the old one runs on and keeps its
        // clients, so only the periodic check can notice.
        let group = try RedisSentinelGroup(replica: false, sentinels: 1)
        let other = try RedisServerProcess()
        let redis = Redis(loop: h.loop, deployment: .sentinel(group.settings()))
        let sentinel = try #require(redis.sentinelClient)
        sentinel.checkInterval = 0.2
        #expect(h.send(redis, ["SET", "a", "1"]) == .success(.status("OK")))
        #expect(sentinel.master?.endpoint.port == group.master.port)
        let port = group.sentinels[0].port
        try ProcessRunner.redisCLI(port: port, ["SENTINEL", "REMOVE", RedisSentinelGroup.masterName])
        try ProcessRunner.redisCLI(
            port: port,
            [
                "SENTINEL", "MONITOR", RedisSentinelGroup.masterName, "127.0.0.1",
                String(other.port), "2"
            ])
        let switched = h.run(limit: 5) { finish in
            func poll() {
                if sentinel.master?.endpoint.port == other.port { return finish() }
                h.loop.schedule(after: 0.05, poll)
            }
            poll()
        }
        #expect(switched)
        #expect(h.send(redis, ["SET", "b", "2"]) == .success(.status("OK")))
        let direct = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: other.port))
        #expect(h.send(direct, ["GET", "b"]) == .success(.bulk("2")))
    }

    @Test func noMasterFailsQuickly() throws {
        let group = try RedisSentinelGroup(replica: false, sentinels: 1)
        var settings = group.settings()
        settings.masterName = "not-monitored"
        let redis = Redis(loop: h.loop, deployment: .sentinel(settings), connectTimeout: 0.5, commandTimeout: 0.5)
        let started = Date()
        guard case .failure(let e)? = h.send(redis, ["GET", "k"]) else {
            Issue.record("must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains("does not monitor a master named not-monitored"))
        #expect(Date().timeIntervalSince(started) < 1)
        // Backing off: the next command fails at once, without asking.
        guard case .failure(let again)? = h.send(redis, ["GET", "k"]) else {
            Issue.record("must fail")
            return
        }
        #expect(again.message.contains("next Sentinel query"))

        let nobody = Redis(
            loop: h.loop,
            deployment: .sentinel(
                RedisSentinelSettings(
                    sentinels: [RedisEndpoint(host: "127.0.0.1", port: try RedisServerProcess.freePort())],
                    masterName: "m")))
        #expect(h.send(nobody, ["GET", "k"], limit: 3)?.failureKind == .unavailable)
        redis.close()
        #expect(h.send(redis, ["GET", "k"])?.failureKind == .unavailable)
    }
}
