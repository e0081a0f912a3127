import Testing

@testable import Reactor

/// `redis://` and `rediss://` URLs as configuration gives them (every scheme, with Sentinel
/// and Cluster: RedisDeploymentURLTests).
@Suite("RedisEndpoint URL parsing")
struct RedisEndpointTests {
    @Test(arguments: [
        ("redis://localhost", RedisEndpoint(host: "localhost")),
        ("redis://127.0.0.1:6380", RedisEndpoint(host: "127.0.0.1", port: 6380)),
        ("REDIS://cache.internal:7000/3", RedisEndpoint(host: "cache.internal", port: 7000, database: 3)),
        ("redis://:s3cret@redis/", RedisEndpoint(host: "redis", password: "s3cret")),
        (
            "redis://alice:p%40ss%3Aw%2Fd@redis:6379/0",
            RedisEndpoint(host: "redis", username: "alice", password: "p@ss:w/d")
        ),
        (
            "redis://us%65r:pw@[::1]:6390/15",
            RedisEndpoint(host: "::1", port: 6390, username: "user", password: "pw", database: 15)
        ),
        ("redis://[2001:db8::7]", RedisEndpoint(host: "2001:db8::7")),
        ("rediss://host", RedisEndpoint(host: "host", tls: RedisTLS())),
        (
            "REDISS://:pw@cache:6380/2",
            RedisEndpoint(host: "cache", port: 6380, password: "pw", database: 2, tls: RedisTLS())
        ),
        (
            "rediss://10.0.0.5/1?ca_file=%2Fetc%2Fredis%2Fca.pem&server_name=redis.internal",
            RedisEndpoint(
                host: "10.0.0.5", database: 1, tls: RedisTLS(caFile: "/etc/redis/ca.pem", serverName: "redis.internal"))
        ),
        (
            "rediss://[::1]:7000?ca_file=/tmp/ca.pem",
            RedisEndpoint(host: "::1", port: 7000, tls: RedisTLS(caFile: "/tmp/ca.pem"))
        ),
        ("rediss://h?insecure_skip_verify=true", RedisEndpoint(host: "h", tls: RedisTLS(insecureSkipTLSVerify: true))),
        ("rediss://h/?insecure_skip_verify=false", RedisEndpoint(host: "h", tls: RedisTLS()))
    ])
    func good(_ url: String, _ expected: RedisEndpoint) {
        #expect(RedisEndpoint(url: url) == expected)
    }

    @Test(arguments: [
        "", "redis://", "http://host", "unix:///tmp/redis.sock", "redis:/host", "host:6379",
        "redis://host:0", "redis://host:65536", "redis://host:", "redis://host:-1", "redis://host:63a9",
        "redis://host/x", "redis://host/-1", "redis://host/1/2", "redis://host/+1", "redis://host?db=1",
        "redis://host#frag", "redis://user@host", "redis://user:@host", "redis://:@host", "redis://u:p%zz@host",
        "redis://ho st", "redis://[::1", "redis://[::1]x", "redis://[host]", "redis://@host", "redis://:pw@",
        "redis://hôst", "redis://a,b", "redis://host?ca_file=/x", "rediss://", "rediss://a:1,b:2",
        "rediss://h?verify=no", "rediss://h?insecure_skip_verify=yes", "rediss://h?insecure_skip_verify=",
        "rediss://h?ca_file=", "rediss://h?server_name=", "rediss://h?server_name=a%20b",
        "rediss://h?ca_file=/a&ca_file=/b",
        "rediss://h?ca_file", "rediss://h?", "rediss://h?&", "rediss://h?=x", "redis+sentinel://h/mymaster",
        "redis+cluster://h", "rediss+cluster://h"
    ])
    func bad(_ url: String) {
        #expect(RedisEndpoint(url: url) == nil)
    }

    @Test func descriptionHidesThePassword() {
        let endpoint = RedisEndpoint(host: "::1", port: 6380, username: "alice", password: "hunter2", database: 2)
        #expect(endpoint.description == "redis://alice:***@[::1]:6380/2")
        #expect(endpoint.address == "[::1]:6380")
        #expect(!"\(endpoint)".contains("hunter2"))
        let tls = RedisEndpoint(url: "rediss://:hunter2@h:6390/1?server_name=redis.internal&insecure_skip_verify=true")
        #expect(tls?.description == "rediss://:***@h:6390/1?server_name=redis.internal&insecure_skip_verify=true")
    }
}
