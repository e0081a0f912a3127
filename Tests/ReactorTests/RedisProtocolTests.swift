import Testing

@testable import Reactor

/// The Redis client's pieces that need no socket: hiredis' reader and formatter as wrapped
/// here, the command refusals, the backoff and the reply queue.
@Suite("Redis protocol pieces, without sockets")
struct RedisProtocolTests {
    private func replies(_ chunks: [String]) throws -> [RedisReply] {
        let reader = try RedisReader()
        var out: [RedisReply] = []
        for chunk in chunks {
            try Array(chunk.utf8).withUnsafeBytes { try reader.feed($0) }
            while let reply = try reader.next() { out.append(reply) }
        }
        return out
    }

    @Test func readerParsesEveryReplyType() throws {
        let wire = "+OK\r\n-ERR wrong\r\n:-42\r\n$3\r\na\0b\r\n$-1\r\n*-1\r\n*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n*0\r\n"
        #expect(
            try replies([wire]) == [
                .status("OK"), .error("ERR wrong"), .integer(-42), .bulk([0x61, 0x00, 0x62]), .null, .null,
                .array([.integer(1), .null, .array([.status("x")])]), .array([])
            ])
    }

    @Test func readerWaitsForTheWholeReply() throws {
        // Split inside the length line, the payload and the terminator.
        #expect(try replies(["$1", "1\r\nhello ", "world\r", "\n:7\r\n"]) == [.bulk("hello world"), .integer(7)])
        #expect(try replies(["*2\r\n:1\r\n"]) == [])
    }

    @Test func readerRejectsGarbage() throws {
        #expect(throws: RedisError.self) { try replies(["!what\r\n"]) }
        do {
            _ = try replies(["$abc\r\n"])
            Issue.record("a bad bulk length must be a protocol error")
        } catch let error as RedisError {
            #expect(error.kind == .protocolError)
        }
        // hiredis 0.14: arrays nest at most 7 deep.
        #expect(throws: RedisError.self) { try replies([String(repeating: "*1\r\n", count: 9) + ":1\r\n"]) }
    }

    /// hiredis 0.14 allocates an array's element list when its header arrives: a count past
    /// `RedisReader.maxElements` is refused at once, fed whole or a byte at a time, instead of
    /// asking for gigabytes (`*922337201` is 7 GB of pointers).
    @Test(arguments: ["*922337201\r\n", "*1048577\r\n:1\r\n", "*1\r\n*2147483647\r\n"])
    func readerRefusesAnArrayCountPastTheBound(wire: String) {
        for chunks in [[wire], wire.map { String($0) }] {
            do {
                _ = try replies(chunks)
                Issue.record("an array of more than \(RedisReader.maxElements) elements was not refused")
            } catch let error as RedisError {
                #expect(error.kind == .protocolError)
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func readerTakesAnArrayCountUpToTheBound() throws {
        let wire = "*1048576\r\n:1\r\n"
        #expect(try replies([wire]) == [])
        #expect(try replies(wire.map { String($0) }) == [])
    }

    @Test func encodeIsBinarySafeRESP() throws {
        let bytes = try RedisCommand.encode([Array("SET".utf8), [0x00, 0x0D, 0x0A], []])
        #expect(bytes == Array("*3\r\n$3\r\nSET\r\n$3\r\n\0\r\n\r\n$0\r\n\r\n".utf8))
    }

    @Test(arguments: [
        ["SUBSCRIBE", "c"], ["psubscribe", "c*"], ["Unsubscribe"], ["MONITOR"], ["HELLO", "3"],
        ["AUTH", "pw"], ["SELECT", "1"], ["RESET"], ["CLIENT", "REPLY", "OFF"], ["client", "reply", "skip"], []
    ])
    func refusedCommands(_ command: [String]) {
        #expect(throws: RedisError.self) { try RedisCommand.validate(command.map { Array($0.utf8) }) }
    }

    @Test(arguments: [["GET", "k"], ["CLIENT", "ID"], ["MULTI"], ["EVAL", "return 1", "0"], ["selectx"]])
    func allowedCommands(_ command: [String]) throws {
        try RedisCommand.validate(command.map { Array($0.utf8) })
    }

    @Test func backoffDoublesToFiveSecondsAndResets() {
        var backoff = RedisBackoff()
        let delays = (0..<9).map { _ in backoff.next() }
        #expect(delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5, 5])
        backoff.reset()
        #expect(backoff.next() == 0.1)
    }

    @Test func queueKeepsOrderAcrossCompaction() {
        var queue = RedisQueue<Int>()
        var expected = 0
        for i in 0..<5000 {
            queue.append(i)
            if i % 3 != 0 {
                #expect(queue.popFirst() == expected)
                expected += 1
            }
        }
        #expect(queue.count == 5000 - expected)
        #expect(queue.first == expected)
        #expect(queue.removeAll() == Array(expected..<5000))
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }
}
