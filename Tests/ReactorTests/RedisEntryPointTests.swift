import Foundation
import TestSupport
import Testing

@testable import Reactor

/// `Redis`, the one entry point, on a single server: the same rules as on a cluster (keys
/// known or named, one slot per command), so code tested here works on a cluster.
@Suite("Redis entry point on one server", .serialized)
struct RedisEntryPointTests {
    let h = RedisLoopHarness()

    @Test func knownCommandsFindTheirKeys() throws {
        let server = try RedisServerProcess()
        let redis = Redis(
            loop: h.loop, deployment: try #require(RedisDeployment(url: "redis://127.0.0.1:\(server.port)/1")))
        #expect(!redis.isConnected)
        #expect(h.send(redis, ["SET", "k", "v", "NX", "EX", "10"]) == .success(.status("OK")))
        #expect(redis.isConnected)
        #expect(h.send(redis, ["GET", "k"]) == .success(.bulk("v")))
        #expect(h.send(redis, ["SADD", "{s}1", "a", "b"]) == .success(.integer(2)))
        #expect(
            h.send(redis, ["SMEMBERS", "{s}1"]).flatMap { try? $0.get() }.map { reply -> Set<String> in
                guard case .array(let items) = reply else { return [] }
                return Set(items.compactMap(\.text))
            } == ["a", "b"])
        #expect(
            h.send(redis, ["EVALSHA", "0000000000000000000000000000000000000000", "1", "k"])
                .flatMap { try? $0.get() }.flatMap(\.errorText)?.hasPrefix("NOSCRIPT") == true)
        #expect(h.send(redis, ["DEL", "k", "{s}1"])?.failureKind == .protocolError)
        #expect(h.send(redis, ["DEL", "k"]) == .success(.integer(1)))
        #expect(h.send(redis, ["PING"]) == .success(.status("PONG")))
    }

    @Test func otherCommandsNameTheirKeys() throws {
        let server = try RedisServerProcess()
        let redis = Redis(loop: h.loop, deployment: .standalone(RedisEndpoint(host: "127.0.0.1", port: server.port)))
        guard case .failure(let unknown)? = h.send(redis, ["HSET", "h", "f", "v"]) else {
            Issue.record("must fail")
            return
        }
        #expect(unknown.kind == .protocolError)
        #expect(unknown.message.contains("HSET"))
        #expect(h.send(redis, ["HSET", "h", "f", "v"], keys: [1]) == .success(.integer(1)))
        #expect(
            h.send(redis, ["INFO", "server"], keys: []).flatMap { try? $0.get() }?.text?.contains("redis_version")
                == true)
        #expect(h.send(redis, ["HGET", "h", "f"], keys: [5])?.failureKind == .protocolError)
        #expect(h.send(redis, ["SUBSCRIBE", "c"], keys: [])?.failureKind == .protocolError)
        #expect(h.send(redis, ["EVAL", "return 1", "3", "a"])?.failureKind == .protocolError)
        // Nothing refused was sent: the connection still matches replies.
        #expect(h.send(redis, ["ECHO", "after"]) == .success(.bulk("after")))
        redis.close()
        #expect(h.send(redis, ["PING"])?.failureKind == .unavailable)
    }
}

extension RedisReply {
    /// An error reply's text, nil for others.
    var errorText: String? {
        if case .error(let text) = self { return text }
        return nil
    }
}
