import Foundation
import TestSupport
import Testing

@testable import Reactor

/// RedisClient against a real redis-server per test: commands and replies, pipelining,
/// login (requirepass, ACL users) and database selection. Failures and deadlines are in
/// RedisClientFailureTests.
@Suite("RedisClient: commands on a real redis-server", .serialized)
struct RedisClientTests {
    let h = RedisLoopHarness()

    private func client(
        _ server: RedisServerProcess, username: String? = nil, password: String? = nil,
        database: Int = 0
    ) -> RedisClient {
        RedisClient(
            loop: h.loop,
            endpoint: RedisEndpoint(
                host: "127.0.0.1", port: server.port, username: username,
                password: password, database: database))
    }

    @Test func setNXGetIncr() throws {
        let server = try RedisServerProcess()
        let c = client(server)
        #expect(h.send(c, ["SET", "k", "v", "NX", "EX", "10"]) == .success(.status("OK")))
        #expect(c.isConnected)
        #expect(h.send(c, ["SET", "k", "other", "NX", "EX", "10"]) == .success(.null))
        #expect(h.send(c, ["GET", "k"]) == .success(.bulk("v")))
        #expect(h.send(c, ["GET", "missing"]) == .success(.null))
        #expect(h.send(c, ["INCR", "n"]) == .success(.integer(1)))
        #expect(h.send(c, ["INCRBY", "n", "41"]) == .success(.integer(42)))
        guard case .success(.integer(let ttl))? = h.send(c, ["TTL", "k"]) else {
            Issue.record("TTL")
            return
        }
        #expect((1...10).contains(ttl))
        #expect(h.send(c, ["MGET", "k", "missing", "n"]) == .success(.array([.bulk("v"), .null, .bulk("42")])))
    }

    @Test func valuesAreBinarySafe() throws {
        let server = try RedisServerProcess()
        let c = client(server)
        let key: [UInt8] = Array("bin\0\r\nkey".utf8)
        let value: [UInt8] = [0x00, 0x0D, 0x0A, 0xFF, 0x24, 0x2A, 0x0D, 0x0A, 0x00]
        #expect(h.send(c, bytes: [Array("SET".utf8), key, value]) == .success(.status("OK")))
        #expect(h.send(c, bytes: [Array("GET".utf8), key]) == .success(.bulk(value)))
        #expect(h.send(c, bytes: [Array("STRLEN".utf8), key]) == .success(.integer(Int64(value.count))))
        #expect(h.send(c, bytes: [Array("SET".utf8), Array("empty".utf8), []]) == .success(.status("OK")))
        #expect(h.send(c, ["GET", "empty"]) == .success(.bulk([])))
    }

    @Test func thousandPipelinedCommandsAnsweredInOrder() throws {
        let server = try RedisServerProcess()
        let c = client(server)
        // Sent before the connection exists: queued, then written at once after connecting.
        let echoes = (0..<1000).map { ["ECHO", "m\($0)"] }
        let first = h.sendAll(c, echoes)
        #expect(first == (0..<1000).map { .success(.bulk("m\($0)")) })
        // Sent on the live connection, all before the first reply is read.
        let incrs = h.sendAll(c, Array(repeating: ["INCR", "counter"], count: 1000))
        #expect(incrs == (1...1000).map { .success(.integer(Int64($0))) })
    }

    @Test func errorReplyIsAReplyNotAFailure() throws {
        let server = try RedisServerProcess()
        let c = client(server)
        #expect(h.send(c, ["SET", "s", "not a number"]) == .success(.status("OK")))
        guard case .success(.error(let message))? = h.send(c, ["INCR", "s"]) else {
            Issue.record("INCR on a string must answer an error reply")
            return
        }
        #expect(message.hasPrefix("ERR"))
        guard case .success(.error(let unknown))? = h.send(c, ["NOSUCHCOMMAND"]) else {
            Issue.record("unknown")
            return
        }
        #expect(unknown.contains("unknown command"))
        // The connection carries on.
        #expect(c.isConnected)
        #expect(h.send(c, ["PING"]) == .success(.status("PONG")))
    }

    @Test func commandsThatBreakReplyMatchingAreRefused() throws {
        let server = try RedisServerProcess()
        let c = client(server)
        #expect(h.send(c, ["PING"]) == .success(.status("PONG")))
        for command in [["SUBSCRIBE", "ch"], ["client", "reply", "off"], ["SELECT", "2"], ["HELLO", "3"], ["MONITOR"]] {
            #expect(h.send(c, command)?.failureKind == .protocolError, "\(command)")
        }
        #expect(h.send(c, bytes: [])?.failureKind == .protocolError)
        // Refused before sending: the connection is untouched and still matches replies.
        #expect(c.isConnected)
        #expect(h.send(c, ["ECHO", "after"]) == .success(.bulk("after")))
    }

    @Test func requirepass() throws {
        let server = try RedisServerProcess(["--requirepass", "s3cret-pw"])
        let good = client(server, password: "s3cret-pw")
        #expect(h.send(good, ["PING"]) == .success(.status("PONG")))

        let wrong = client(server, password: "wrong-pw")
        guard case .failure(let e)? = h.send(wrong, ["PING"]) else {
            Issue.record("wrong password must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains("AUTH rejected"))
        #expect(!e.message.contains("wrong-pw"))
        #expect(!wrong.isConnected)

        let none = client(server)
        guard case .success(.error(let noauth))? = h.send(none, ["GET", "k"]) else {
            Issue.record("NOAUTH")
            return
        }
        #expect(noauth.hasPrefix("NOAUTH"))
    }

    @Test func aclUser() throws {
        let server = try RedisServerProcess()
        let admin = client(server)
        #expect(
            h.send(admin, ["ACL", "SETUSER", "alice", "on", ">al1ce-pw", "~*", "&*", "+@all"])
                == .success(.status("OK")))

        let alice = client(server, username: "alice", password: "al1ce-pw")
        #expect(h.send(alice, ["ACL", "WHOAMI"]) == .success(.bulk("alice")))
        #expect(h.send(alice, ["SET", "a", "1"]) == .success(.status("OK")))

        // The default user needs no password here, so a command pipelined behind the failed
        // AUTH would run as `default`: it must never be sent.
        let impostor = client(server, username: "alice", password: "not-hers")
        guard case .failure(let e)? = h.send(impostor, ["SET", "written-by-impostor", "1"]) else {
            Issue.record("must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains("WRONGPASS"))
        #expect(!e.message.contains("not-hers"))
        #expect(h.send(admin, ["EXISTS", "written-by-impostor"]) == .success(.integer(0)))
    }

    @Test func rejectedSelectFailsTheHandshake() throws {
        let server = try RedisServerProcess(["--databases", "4"])
        let c = client(server, database: 9)
        guard case .failure(let e)? = h.send(c, ["SET", "k", "in-db-0?"]) else {
            Issue.record("must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(e.message.contains("SELECT 9 rejected"))
        #expect(h.send(client(server), ["EXISTS", "k"]) == .success(.integer(0)))
    }

    @Test func databaseIsSelectedAndIsolated() throws {
        let server = try RedisServerProcess()
        let db3 = RedisClient(
            loop: h.loop, endpoint: try #require(RedisEndpoint(url: "redis://127.0.0.1:\(server.port)/3")))
        let db0 = client(server)
        #expect(h.send(db3, ["SET", "k", "three"]) == .success(.status("OK")))
        #expect(h.send(db0, ["GET", "k"]) == .success(.null))
        #expect(h.send(db3, ["GET", "k"]) == .success(.bulk("three")))
        #expect(h.send(db3, ["DBSIZE"]) == .success(.integer(1)))
        #expect(h.send(db0, ["DBSIZE"]) == .success(.integer(0)))
    }

    @Test func passwordAndDatabaseTogether() throws {
        let server = try RedisServerProcess(["--requirepass", "pw"])
        let c = client(server, password: "pw", database: 5)
        #expect(h.send(c, ["SET", "x", "5"]) == .success(.status("OK")))
        #expect(h.send(client(server, password: "pw", database: 5), ["GET", "x"]) == .success(.bulk("5")))
        #expect(h.send(client(server, password: "pw"), ["GET", "x"]) == .success(.null))
    }

    @Test func hostNameGoesThroughTheResolver() throws {
        let server = try RedisServerProcess()
        let c = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "localhost", port: server.port))
        #expect(h.send(c, ["PING"]) == .success(.status("PONG")))
    }
}
