import Foundation
import JOSE
import Reactor
import TestSupport
import Testing

@testable import Gateway

/// The Redis store against a real redis-server: the takes of one loop turn go as one call
/// per hash slot, and the answers are those of the same takes one by one.
@Suite("Rate limits: the Redis store, a turn's takes together")
struct RedisRateLimitsTests {
    final class Harness {
        let server: RedisServerProcess
        let loop = EventLoop()
        let client: Redis
        let store: RedisRateLimits

        init() throws {
            server = try RedisServerProcess()
            let endpoint = try #require(RedisEndpoint(url: "redis://127.0.0.1:\(server.port)/0"))
            client = Redis(loop: loop, deployment: .standalone(endpoint))
            store = RedisRateLimits(client: client, loop: loop, prefix: "t:")
        }

        /// Takes `keys` (one take each, in order) in one loop turn; the decisions in order.
        func takeInOneTurn(_ keys: [String], _ cell: GCRA) -> [Result<GCRA.Decision, RateLimitStoreError>?] {
            var results = [Result<GCRA.Decision, RateLimitStoreError>?](repeating: nil, count: keys.count)
            var left = keys.count
            loop.schedule(after: 0) { [self] in
                for (i, key) in keys.enumerated() {
                    store.take(key, cell) { [loop] r in
                        results[i] = r
                        left -= 1
                        if left == 0 { loop.stop() }
                    }
                }
            }
            loop.schedule(after: 5) { [loop] in loop.stop() }
            loop.run()
            return results
        }

        func commandsProcessed() -> Int {
            var count = 0
            client.send(["INFO", "stats"], keys: []) { [loop] r in
                if case .success(.bulk(let bytes)) = r,
                    let line = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n")
                        .first(where: { $0.hasPrefix("total_commands_processed:") })
                {
                    count = Int(line.split(separator: ":")[1]) ?? 0
                }
                loop.stop()
            }
            loop.schedule(after: 5) { [loop] in loop.stop() }
            loop.run()
            return count
        }
    }

    /// 10 per second, 3 at once.
    static let cell = GCRA(rate: RateLimitRate(count: 10, seconds: 1), burst: 3)

    /// A reply that is no answer of the script's (a span near Int64's ends, which the gateway
    /// would add to the clock) is a store failure, not a decision.
    @Test(arguments: [Int64.min, -(NumericDate.longestLifetime * 1_000_000) - 1, Int64.max - 999_998, Int64.max])
    func aReplyOutsideTenYearsIsAStoreFailure(_ micros: Int64) {
        for reply in [[Int64(0), micros, 1], [0, 1, micros], [1, 3, micros]] {
            let result = RedisRateLimits.decisions(.success(.array(reply.map { .integer($0) })), count: 1)
            guard case .failure = result else {
                Issue.record("\(reply) was taken as a decision")
                continue
            }
        }
        guard
            case .success(let d) = RedisRateLimits.decisions(
                .success(.array([.integer(0), .integer(5), .integer(9)])), count: 1)
        else {
            Issue.record("a plausible reply was refused")
            return
        }
        #expect(d.first?.retryAfter == 5)
    }

    @Test func oneCallersTakesOfOneTurnAreCountedOneByOne() throws {
        let h = try Harness()
        let results = h.takeInOneTurn(Array(repeating: "alice", count: 5), Self.cell)
        let decisions = results.compactMap { try? $0?.get() }
        #expect(decisions.count == 5)
        #expect(decisions.map(\.allowed) == [true, true, true, false, false])
        #expect(decisions.prefix(3).map(\.remaining) == [2, 1, 0])
        // Refused: the wait until one more is allowed, about one interval (100 ms).
        #expect(decisions[3].retryAfter > 0 && decisions[3].retryAfter <= 100_000)
        // The next turn sees what the first one wrote.
        let later = h.takeInOneTurn(["alice"], Self.cell).compactMap { try? $0?.get() }
        #expect(later.map(\.allowed) == [false])
    }

    @Test func differentCallersInOneTurnHaveBudgetsOfTheirOwn() throws {
        let h = try Harness()
        let keys = ["alice", "bob", "alice", "carol", "bob", "alice", "alice"]
        let decisions = h.takeInOneTurn(keys, Self.cell).compactMap { try? $0?.get() }
        #expect(decisions.map(\.allowed) == [true, true, true, true, true, true, false])
    }

    @Test func aCallersTakesOfOneTurnAreOneCall() throws {
        let h = try Harness()
        _ = h.takeInOneTurn(["warm-up"], Self.cell)  // the script is loaded
        let before = h.commandsProcessed()
        _ = h.takeInOneTurn(Array(repeating: "dave", count: 20), Self.cell)
        // One EVALSHA, and inside it TIME, one GET and one SET; plus the INFO that reads.
        #expect(h.commandsProcessed() - before == 5)
    }

    @Test func keysHaveATTLAndNoRawIdentity() throws {
        let h = try Harness()
        _ = h.takeInOneTurn(["opaque-digest"], Self.cell)
        var ttl: Int64 = -3
        h.client.send(["PTTL", "t:rl:{opaque-digest}"]) { [loop = h.loop] r in
            if case .success(.integer(let n)) = r { ttl = n }
            loop.stop()
        }
        h.loop.schedule(after: 5) { [loop = h.loop] in loop.stop() }
        h.loop.run()
        #expect(ttl > 0 && ttl <= 100)
    }

    @Test func redisDownFailsEveryTakeOfTheTurn() throws {
        let h = try Harness()
        h.server.kill()
        let results = h.takeInOneTurn(["a", "b", "a"], Self.cell)
        #expect(results.count == 3)
        for r in results {
            guard case .failure? = r else {
                Issue.record("expected a store failure, got \(String(describing: r))")
                continue
            }
        }
    }
}
