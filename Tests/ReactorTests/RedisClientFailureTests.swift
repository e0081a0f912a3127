import Foundation
import Glibc
import TestSupport
import Testing

@testable import Reactor

/// RedisClient when things go wrong, against real redis-server processes and sockets: no
/// command may hang, a dead server costs callers nothing, and the client heals itself.
/// Time limits here are generous upper bounds that prove "no hang", not performance.
@Suite("RedisClient: failures, deadlines, recovery", .serialized)
struct RedisClientFailureTests {
    let h = RedisLoopHarness()

    @Test func serverNotRunningFailsQuickly() throws {
        let port = try RedisServerProcess.freePort()
        // A connect timeout far above the bound below: the refusal itself must end it.
        let c = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: port), connectTimeout: 5)
        let started = Date()
        guard case .failure(let e)? = h.send(c, ["PING"], limit: 5) else {
            Issue.record("must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(Date().timeIntervalSince(started) < 0.9)
        // During the backoff: failed at once, without a connect attempt.
        guard case .failure(let again)? = h.send(c, ["PING"], limit: 5) else {
            Issue.record("must fail")
            return
        }
        #expect(again.kind == .unavailable)
        #expect(again.message.contains("next connect attempt"))
        #expect(!c.isConnected)
    }

    @Test func serverKilledThenRestartedRecovers() throws {
        let server = try RedisServerProcess()
        let c = RedisClient(
            loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port), commandTimeout: 10)
        #expect(h.send(c, ["SET", "k", "v"]) == .success(.status("OK")))
        weak let firstConnection = c.connection
        #expect(firstConnection != nil)

        // A command in flight (blocked on the server) when the server dies.
        var blocked: RedisLoopHarness.Reply?
        let ended = h.run(limit: 5) { finish in
            c.send(["BLPOP", "nothing", "0"]) {
                blocked = $0
                finish()
            }
            h.loop.schedule(after: 0.2) { server.kill() }
        }
        #expect(ended)
        #expect(blocked?.failureKind == .unavailable)
        #expect(!c.isConnected)
        // The dead connection is gone (bufferevent freed, libevent's reference released).
        #expect(firstConnection == nil)
        #expect(h.send(c, ["PING"])?.failureKind == .unavailable)

        try server.start()
        let recovered = h.sendUntilSuccess(c, ["PING"], limit: 15)
        #expect(recovered == .success(.status("PONG")))
        #expect(c.isConnected)
    }

    @Test func commandTimeoutDropsTheConnectionAndNoLateReplyIsMisread() throws {
        let server = try RedisServerProcess()
        let endpoint = RedisEndpoint(host: "127.0.0.1", port: server.port)
        let c = RedisClient(loop: h.loop, endpoint: endpoint, commandTimeout: 0.3)
        #expect(h.send(c, ["SET", "k", "v"]) == .success(.status("OK")))

        var replies: [RedisLoopHarness.Reply] = []
        let started = Date()
        h.run(limit: 5) { finish in
            c.send(["DEBUG", "SLEEP", "2"]) {
                replies.append($0)
                if replies.count == 2 { finish() }
            }
            c.send(["GET", "k"]) {
                replies.append($0)
                if replies.count == 2 { finish() }
            }
        }
        #expect(replies.map(\.failureKind) == [.timeout, .timeout])
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(!c.isConnected)

        // Once the server is awake again (a patient client gets through), the next command
        // gets its own reply, not DEBUG SLEEP's late "+OK".
        let patient = RedisClient(loop: h.loop, endpoint: endpoint, commandTimeout: 10)
        #expect(h.send(patient, ["PING"], limit: 10) == .success(.status("PONG")))
        #expect(h.sendUntilSuccess(c, ["GET", "k"], limit: 10) == .success(.bulk("v")))
    }

    @Test func aCommandSentJustAfterATimeoutNeverGetsTheLateReply() throws {
        let server = try RedisServerProcess()
        let c = RedisClient(
            loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port), commandTimeout: 0.5)
        #expect(h.send(c, ["PING"]) == .success(.status("PONG")))
        var sleep: RedisLoopHarness.Reply?
        var echo: RedisLoopHarness.Reply?
        h.run(limit: 5) { finish in
            c.send(["DEBUG", "SLEEP", "0.8"]) { reply in
                sleep = reply
                // Past the 100 ms backoff, while the server still sleeps: if the timed-out
                // connection were kept, DEBUG SLEEP's "+OK" would be taken for this reply.
                h.loop.schedule(after: 0.15) {
                    c.send(["ECHO", "mine"]) {
                        echo = $0
                        finish()
                    }
                }
            }
        }
        #expect(sleep?.failureKind == .timeout)
        #expect(echo != nil)
        #expect(echo != .success(.status("OK")))
        // Normally the server wakes in time for it; on a loaded machine it may time out too.
        if case .success(let reply)? = echo { #expect(reply == .bulk("mine")) }
    }

    @Test func unansweredHandshakeEndsAtConnectTimeout() throws {
        // A listening socket nobody accepts on: TCP connects (the kernel's backlog), no
        // byte ever comes back.
        let fd = try Listener.open(host: "127.0.0.1", port: 0)
        defer { Glibc.close(fd) }
        let endpoint = RedisEndpoint(host: "127.0.0.1", port: Listener.port(of: fd), password: "pw")
        let c = RedisClient(loop: h.loop, endpoint: endpoint, connectTimeout: 0.3, commandTimeout: 0.3)
        let started = Date()
        guard case .failure(let e)? = h.send(c, ["PING"], limit: 5) else {
            Issue.record("must fail")
            return
        }
        #expect(e.kind == .unavailable)
        #expect(Date().timeIntervalSince(started) < 2)

        // Without a handshake the connection is ready at once; the command deadline ends it.
        let bare = RedisClient(
            loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: endpoint.port),
            commandTimeout: 0.3)
        #expect(h.send(bare, ["PING"], limit: 5)?.failureKind == .timeout)
    }

    @Test func protocolErrorFailsPendingAndReconnects() throws {
        let server = try RedisServerProcess()
        let c = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port))
        // hiredis 0.14's reader refuses arrays nested deeper than 7; a Lua table makes one.
        let deep = "return {{{{{{{{{1}}}}}}}}}"
        let replies = h.sendAll(c, [["EVAL", deep, "0"], ["PING"]])
        #expect(replies.map(\.failureKind) == [.protocolError, .protocolError])
        #expect(!c.isConnected)
        #expect(h.sendUntilSuccess(c, ["PING"], limit: 10) == .success(.status("PONG")))
    }

    @Test func pendingCommandsAreBounded() throws {
        let server = try RedisServerProcess()
        let c = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port), maxPending: 3)
        let replies = h.sendAll(c, (0..<5).map { ["ECHO", "\($0)"] })
        // The two beyond the cap fail first (on the next loop turn), the three queued follow.
        #expect(replies.filter { $0.failureKind == .unavailable }.count == 2)
        #expect(replies.compactMap { try? $0.get() } == [.bulk("0"), .bulk("1"), .bulk("2")])
    }

    @Test func closeFailsPendingAndIsFinal() throws {
        let server = try RedisServerProcess()
        let c = RedisClient(
            loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port), commandTimeout: 10)
        #expect(h.send(c, ["PING"]) == .success(.status("PONG")))
        var replies: [RedisLoopHarness.Reply] = []
        h.run(limit: 5) { finish in
            c.send(["BLPOP", "nothing", "0"]) {
                replies.append($0)
                if replies.count == 2 { finish() }
            }
            c.send(["PING"]) {
                replies.append($0)
                if replies.count == 2 { finish() }
            }
            h.loop.schedule(after: 0.1) {
                c.close()
                c.close()
            }
        }
        #expect(replies.map(\.failureKind) == [.unavailable, .unavailable])
        #expect(!c.isConnected)
        #expect(h.send(c, ["PING"])?.failureKind == .unavailable)
    }

    @Test func clientGoneMeansConnectionClosed() throws {
        let server = try RedisServerProcess()
        let admin = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port))
        var c: RedisClient? = RedisClient(loop: h.loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port))
        #expect(h.send(c!, ["CLIENT", "SETNAME", "short-lived"]) == .success(.status("OK")))
        weak let weakClient = c
        weak let weakConnection = c?.connection
        c = nil
        // Nothing (libevent callbacks, timers) keeps the client or its connection alive, and
        // the socket closes.
        #expect(weakClient == nil)
        #expect(weakConnection == nil)
        let gone = h.run(limit: 5) { finish in
            func poll() {
                admin.send(["CLIENT", "LIST"]) { reply in
                    if case .success(.bulk(let list)) = reply,
                        !String(decoding: list, as: UTF8.self).contains("short-lived")
                    {
                        finish()
                    } else {
                        h.loop.schedule(after: 0.05, poll)
                    }
                }
            }
            poll()
        }
        #expect(gone)
    }
}
