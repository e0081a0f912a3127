import Testing

@testable import Reactor

/// The cluster pieces that need no socket: CRC16 and hash slots with the cluster
/// specification's vectors, key positions, CROSSSLOT, redirection replies, the slot map.
@Suite("Redis Cluster protocol pieces, without sockets")
struct RedisClusterProtocolTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func crc16MatchesTheSpecification() {
        // Cluster specification, appendix A: "Output for "123456789": 31C3".
        #expect(RedisHashSlot.crc16(bytes("123456789")) == 0x31C3)
        #expect(RedisHashSlot.crc16([]) == 0)
        // XMODEM check values of single bytes: the polynomial itself for 0x01.
        #expect(RedisHashSlot.crc16([0x01]) == 0x1021)
        #expect(RedisHashSlot.crc16([0x80]) == 0x9188)
    }

    @Test(arguments: [
        // CLUSTER KEYSLOT answers, from the Redis documentation.
        ("somekey", 11058), ("foo", 12182), ("foo{hash_tag}", 2515), ("hash_tag", 2515)
    ])
    func slotsOfKnownKeys(_ key: String, _ slot: Int) {
        #expect(RedisHashSlot.slot(of: bytes(key)) == slot)
    }

    @Test func hashTagsAsTheSpecificationDefinesThem() {
        let slot = { (key: String) in RedisHashSlot.slot(of: self.bytes(key)) }
        let crc = { (text: String) in Int(RedisHashSlot.crc16(self.bytes(text)) & 0x3FFF) }
        #expect(slot("{user1000}.following") == slot("{user1000}.followers"))
        #expect(slot("{user1000}.following") == crc("user1000"))
        #expect(slot("foo{}{bar}") == crc("foo{}{bar}"))  // empty first tag: the whole key
        #expect(slot("foo{{bar}}zap") == crc("{bar"))  // from the first { to the next }
        #expect(slot("foo{bar}{zap}") == crc("bar"))  // the first tag only
        #expect(slot("{a") == crc("{a"))
        #expect(slot("a}b{") == crc("a}b{"))
        #expect((0..<1000).allSatisfy { (0..<RedisHashSlot.count).contains(slot("key:\($0)")) })
    }

    @Test func keysInDifferentSlotsAreRefused() throws {
        let same = [bytes("DEL"), bytes("{u}:a"), bytes("{u}:b")]
        #expect(try RedisHashSlot.slot(of: same, keys: [1, 2]) == RedisHashSlot.slot(of: bytes("u")))
        #expect(try RedisHashSlot.slot(of: [bytes("PING")], keys: []) == nil)
        let cross = [bytes("mget"), bytes("foo"), bytes("somekey")]
        #expect { try RedisHashSlot.slot(of: cross, keys: [1, 2]) } throws: {
            ($0 as? RedisError)?.kind == .protocolError && "\($0)".contains("CROSSSLOT") && "\($0)".contains("MGET")
        }
        #expect(throws: RedisError.self) { try RedisHashSlot.slot(of: same, keys: [3]) }
        #expect(throws: RedisError.self) { try RedisHashSlot.slot(of: same, keys: [0]) }
    }

    @Test(arguments: [
        (["GET", "k"], [1]), (["set", "k", "v", "NX", "EX", "5"], [1]), (["DEL", "a", "b", "c"], [1, 2, 3]),
        (["EXPIRE", "k", "5"], [1]), (["PEXPIRE", "k", "5"], [1]), (["SADD", "s", "m"], [1]), (["SREM", "s", "m"], [1]),
        (["SMEMBERS", "s"], [1]), (["INCR", "n"], [1]), (["EVAL", "return 1", "0"], []),
        (["EVALSHA", "abc", "2", "k1", "k2", "arg"], [1 + 2, 2 + 2]), (["PING"], []), (["GET"], [])
    ])
    func knownKeyPositions(_ command: [String], _ keys: [Int]) throws {
        #expect(try RedisKeys.indexes(of: command.map { bytes($0) }) == keys)
    }

    @Test func unknownCommandsAndBadNumkeys() throws {
        #expect(try RedisKeys.indexes(of: [bytes("HSET"), bytes("h"), bytes("f"), bytes("v")]) == nil)
        #expect(try RedisKeys.indexes(of: [bytes("WAIT"), bytes("1"), bytes("0")]) == nil)
        #expect(throws: RedisError.self) { try RedisKeys.indexes(of: ["EVAL", "s", "2", "k"].map { self.bytes($0) }) }
        #expect(throws: RedisError.self) { try RedisKeys.indexes(of: ["EVAL", "s", "-1"].map { self.bytes($0) }) }
        #expect(throws: RedisError.self) { try RedisKeys.indexes(of: ["EVALSHA", "s", "x"].map { self.bytes($0) }) }
    }

    @Test func redirections() {
        #expect(
            RedisRedirect("MOVED 3999 127.0.0.1:6381")
                == RedisRedirect(kind: .moved, slot: 3999, host: "127.0.0.1", port: 6381))
        #expect(RedisRedirect("ASK 16383 ::1:7000") == RedisRedirect(kind: .ask, slot: 16383, host: "::1", port: 7000))
        #expect(RedisRedirect("MOVED 0 :7001") == RedisRedirect(kind: .moved, slot: 0, host: "", port: 7001))
        for bad in [
            "MOVED 16384 h:1", "MOVED -1 h:1", "MOVED 1 h", "MOVED 1 h:0", "ASK 1", "ERR MOVED 1 h:1",
            "MOVED 1 h:1 extra", "moved 1 h:1", "WRONGTYPE Operation against a key"
        ] {
            #expect(RedisRedirect(bad) == nil, "\(bad)")
        }
    }

    @Test func slotMapFromClusterSlots() throws {
        let answering = RedisEndpoint(host: "10.0.0.9", port: 7000)
        func node(_ host: String, _ port: UInt16) -> RedisEndpoint {
            RedisEndpoint(host: host, port: port, password: "pw")
        }
        func master(_ host: String, _ port: Int64) -> RedisReply { .array([.bulk(host), .integer(port), .bulk("id")]) }
        let reply = RedisReply.array([
            .array([.integer(0), .integer(5460), master("10.0.0.1", 7000), master("10.0.0.4", 7000)]),
            .array([.integer(5461), .integer(10922), master("", 7001)]),
            .array([.integer(10923), .integer(16000), master("10.0.0.1", 7000)]),
            .array([.integer(16001), .integer(16383), master("?", 7002)])
        ])
        var map = try #require(RedisSlotMap(clusterSlots: reply, answeredBy: answering, node: node))
        #expect(map.nodes == [node("10.0.0.1", 7000), node("10.0.0.9", 7001)])
        #expect(map.node(for: 0) == node("10.0.0.1", 7000))
        #expect(map.node(for: 5461) == node("10.0.0.9", 7001))
        #expect(map.node(for: 12000) == node("10.0.0.1", 7000))
        #expect(map.node(for: 16001) == nil)
        map.assign(16001, to: node("10.0.0.2", 7002))
        #expect(map.node(for: 16001) == node("10.0.0.2", 7002))
        #expect(map.nodes.count == 3)

        for bad: RedisReply in [
            .array([]), .status("OK"), .array([.array([.integer(0), .integer(16384), master("h", 1)])]),
            .array([.array([.integer(5), .integer(4), master("h", 1)])]),
            .array([.array([.integer(0), .integer(1), master("h", 0)])]),
            .array([.array([.integer(0), .integer(1)])])
        ] {
            #expect(RedisSlotMap(clusterSlots: bad, answeredBy: answering, node: node) == nil)
        }
    }
}
