import Testing

@testable import Reactor

/// Every scheme `RedisDeployment(url:)` reads: one server, Sentinel, Cluster; good and bad
/// forms, and descriptions that never show a password.
@Suite("RedisDeployment URL parsing")
struct RedisDeploymentURLTests {
    @Test func standaloneAndTLS() {
        #expect(RedisDeployment(url: "redis://h:7/3") == .standalone(RedisEndpoint(host: "h", port: 7, database: 3)))
        #expect(
            RedisDeployment(url: "rediss://:pw@h?ca_file=/ca.pem")
                == .standalone(RedisEndpoint(host: "h", password: "pw", tls: RedisTLS(caFile: "/ca.pem"))))
    }

    @Test(arguments: [
        (
            "redis+sentinel://s1,s2:26380,[::1]/mymaster",
            RedisSentinelSettings(
                sentinels: [
                    RedisEndpoint(host: "s1", port: 26379), RedisEndpoint(host: "s2", port: 26380),
                    RedisEndpoint(host: "::1", port: 26379)
                ], masterName: "mymaster")
        ),
        (
            "REDIS+SENTINEL://alice:p%40ss@s1:1/cache-1.a_b/4?sentinel_password=s%26pw",
            RedisSentinelSettings(
                sentinels: [RedisEndpoint(host: "s1", port: 1, password: "s&pw")], masterName: "cache-1.a_b",
                username: "alice", password: "p@ss", database: 4)
        ),
        (
            "redis+sentinel://:pw@s1/m/",
            RedisSentinelSettings(
                sentinels: [RedisEndpoint(host: "s1", port: 26379)],
                masterName: "m", password: "pw")
        )
    ])
    func sentinel(_ url: String, _ expected: RedisSentinelSettings) {
        #expect(RedisDeployment(url: url) == .sentinel(expected))
    }

    @Test(arguments: [
        (
            "redis+cluster://n1,n2:7001,[::1]:7002",
            RedisClusterSettings(seeds: [
                RedisEndpoint(host: "n1"), RedisEndpoint(host: "n2", port: 7001),
                RedisEndpoint(host: "::1", port: 7002)
            ])
        ),
        (
            "redis+cluster://bob:pw@n1:7000/",
            RedisClusterSettings(
                seeds: [RedisEndpoint(host: "n1", port: 7000)],
                username: "bob", password: "pw")
        )
    ])
    func cluster(_ url: String, _ expected: RedisClusterSettings) {
        #expect(RedisDeployment(url: url) == .cluster(expected))
        // Every seed carries the cluster's login.
        if case .cluster(let settings)? = RedisDeployment(url: url) {
            #expect(settings.seeds.allSatisfy { $0.password == expected.password && $0.database == 0 })
        }
    }

    @Test(arguments: [
        "redis+sentinel://s1", "redis+sentinel://s1/", "redis+sentinel://s1/m/1/2", "redis+sentinel://s1/m/x",
        "redis+sentinel://s1/my%20master", "redis+sentinel://s1/m?password=x",
        "redis+sentinel://s1/m?sentinel_password=",
        "redis+sentinel://s1,/m", "redis+sentinel://,s1/m", "redis+sentinel://s1:0/m", "redis+sentinel://user@s1/m",
        "redis+sentinel:///m", "rediss+sentinel://s1/m", "redis+sentinel://s1/m#f",
        "redis+cluster://", "redis+cluster://n1/0", "redis+cluster://n1/1", "redis+cluster://n1?x=1",
        "redis+cluster://n1,,n2", "redis+cluster://n1:99999", "redis+cluster://:@n1", "rediss+cluster://n1",
        "redis+unknown://h", "cluster://h", "unix:///tmp/redis.sock"
    ])
    func bad(_ url: String) {
        #expect(RedisDeployment(url: url) == nil)
    }

    @Test func descriptionsHidePasswords() throws {
        let sentinel = try #require(
            RedisDeployment(url: "redis+sentinel://alice:hunter2@s1,s2:1/m/2?sentinel_password=t0p"))
        #expect(sentinel.description == "redis+sentinel://alice:***@s1:26379,s2:1/m/2?sentinel_password=***")
        let cluster = try #require(RedisDeployment(url: "redis+cluster://:hunter2@n1,n2:7001"))
        #expect(cluster.description == "redis+cluster://:***@n1:6379,n2:7001")
        let tls = try #require(RedisDeployment(url: "rediss://:hunter2@h"))
        for text in [sentinel.description, cluster.description, tls.description, "\(sentinel)", "\(cluster)"] {
            #expect(!text.contains("hunter2") && !text.contains("t0p"))
        }
    }
}
