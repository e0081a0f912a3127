import Testing
@testable import Reactor

/// `redis://` URLs as configuration gives them.
@Suite("RedisEndpoint URL parsing")
struct RedisEndpointTests {
    @Test(arguments: [
        ("redis://localhost", RedisEndpoint(host: "localhost")),
        ("redis://127.0.0.1:6380", RedisEndpoint(host: "127.0.0.1", port: 6380)),
        ("REDIS://cache.internal:7000/3", RedisEndpoint(host: "cache.internal", port: 7000, database: 3)),
        ("redis://:s3cret@redis/", RedisEndpoint(host: "redis", password: "s3cret")),
        ("redis://alice:p%40ss%3Aw%2Fd@redis:6379/0", RedisEndpoint(host: "redis", username: "alice", password: "p@ss:w/d")),
        ("redis://us%65r:pw@[::1]:6390/15", RedisEndpoint(host: "::1", port: 6390, username: "user", password: "pw", database: 15)),
        ("redis://[2001:db8::7]", RedisEndpoint(host: "2001:db8::7")),
    ])
    func good(_ url: String, _ expected: RedisEndpoint) {
        #expect(RedisEndpoint(url: url) == expected)
    }

    @Test(arguments: [
        "", "redis://", "rediss://host", "http://host", "unix:///tmp/redis.sock", "redis:/host", "host:6379",
        "redis://host:0", "redis://host:65536", "redis://host:", "redis://host:-1", "redis://host:63a9",
        "redis://host/x", "redis://host/-1", "redis://host/1/2", "redis://host/+1", "redis://host?db=1",
        "redis://host#frag", "redis://user@host", "redis://user:@host", "redis://:@host", "redis://u:p%zz@host",
        "redis://ho st", "redis://[::1", "redis://[::1]x", "redis://[host]", "redis://@host", "redis://:pw@",
        "redis://hôst",
    ])
    func bad(_ url: String) {
        #expect(RedisEndpoint(url: url) == nil)
    }

    @Test func descriptionHidesThePassword() {
        let endpoint = RedisEndpoint(host: "::1", port: 6380, username: "alice", password: "hunter2", database: 2)
        #expect(endpoint.description == "redis://alice:***@[::1]:6380/2")
        #expect(endpoint.address == "[::1]:6380")
        #expect(!"\(endpoint)".contains("hunter2"))
    }
}
