import Foundation
import Glibc
import TestSupport
import Testing

@testable import Reactor

/// Keep-alive pooling, the stale-connection retry, stray bytes, connecting and DNS.
@Suite("UpstreamPool: connections")
struct UpstreamPoolTests {
    @Test func keepAliveReusesOneConnection() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")
            ]
        ])
        let h = UpstreamHarness(port: server.port)
        let first = h.call(.GET, "/1")
        let second = h.call(.GET, "/2")
        #expect(first.bodyText == "one" && second.bodyText == "two")
        #expect(server.accepted == 1)
        #expect(server.requests.count == 2)
        #expect(h.pool.openConnections == 1 && h.pool.idleCount == 1)
        h.pool.closeIdle()
        #expect(h.pool.openConnections == 0 && h.pool.idleCount == 0)
    }

    /// The read event stays registered across calls and idling; only its deadline changes
    /// (`UpstreamTransport.armRead`). Idling past the response timeout keeps the connection,
    /// and the next call on it gets the response timeout back.
    @Test func idleConnectionHasNoDeadlineAndReuseRestoresIt() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"),
                .readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"),
                .readRequest, .sleep(2)
            ]
        ])
        let h = UpstreamHarness(port: server.port, responseTimeout: 0.3)
        #expect(h.call(.GET, "/1").bodyText == "one")
        h.wait(0.9)
        #expect(h.pool.openConnections == 1 && h.pool.idleCount == 1)
        #expect(h.call(.GET, "/2").bodyText == "two")
        let started = Date()
        let third = h.call(.GET, "/3")
        #expect(third.failure == .responseTimeout && third.failedAfterHead == false)
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(server.accepted == 1)
        #expect(server.requests.count == 3)
    }

    /// A burst of calls past `maxIdle` leaves its connections idle for `surplusGrace` (the
    /// next burst finds them), then the surplus is closed down to `maxIdle`.
    @Test func aBurstsSurplusStaysForTheGraceThenIsClosed() throws {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let server = try ScriptedUpstream(Array(repeating: [.readRequest, .send(answer), .hold], count: 3))
        let h = UpstreamHarness(port: server.port, maxIdle: 1, surplusGrace: 0.3)
        let recorders = (0..<3).map { _ in UpstreamRecorder() }
        var ended = 0
        let done = h.run(limit: 5) { finish in
            for (i, recorder) in recorders.enumerated() {
                recorder.onEnd = {
                    ended += 1
                    if ended == recorders.count { finish() }
                }
                let call = UpstreamCall(
                    pool: h.pool,
                    request: UpstreamCall.Request(
                        method: .GET, target: "/\(i)", fields: HTTP1Fields([("Host", "upstream")]), body: nil),
                    delegate: recorder)
                recorder.call = call
                call.start()
            }
        }
        #expect(done && recorders.allSatisfy { $0.bodyText == "ok" })
        #expect(server.accepted == 3)
        #expect(h.pool.openConnections == 3 && h.pool.idleCount == 3, "the surplus waits out its grace")
        h.wait(0.8)
        #expect(h.pool.openConnections == 1 && h.pool.idleCount == 1, "then only maxIdle stay")
    }

    /// `maxIdle` 0: no keep-alive, every connection closes after its exchange.
    @Test func maxIdleZeroKeepsNothing() throws {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let server = try ScriptedUpstream([[.readRequest, .send(answer), .hold]])
        let h = UpstreamHarness(port: server.port, maxIdle: 0)
        #expect(h.call().bodyText == "ok")
        #expect(h.pool.openConnections == 0 && h.pool.idleCount == 0)
    }

    @Test func connectionCloseIsNotReused() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")]
        ])
        let h = UpstreamHarness(port: server.port)
        let r = h.call()
        #expect(r.completed)
        #expect(h.pool.openConnections == 0)
    }

    @Test func idleConnectionClosedByTheUpstreamIsDropped() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), .close]
        ])
        let h = UpstreamHarness(port: server.port)
        #expect(h.call().completed)
        #expect(server.closed.wait(timeout: .now() + 5) == .success)
        h.wait(0.2)
        #expect(h.pool.openConnections == 0 && h.pool.idleCount == 0)
    }

    /// The upstream closed the kept connection, and the call takes it before the loop has
    /// seen the close: the GET goes again, once, on a new connection.
    @Test func staleConnectionRetriesAnIdempotentRequestOnce() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), .close],
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain")]
        ])
        let h = UpstreamHarness(port: server.port)
        #expect(h.call().completed)
        #expect(server.closed.wait(timeout: .now() + 5) == .success)
        #expect(h.pool.idleCount == 1)
        let r = h.call(.GET, "/retry")
        #expect(r.events == ["head 200", "body", "complete"])
        #expect(r.bodyText == "again")
        #expect(server.accepted == 2)
        #expect(server.requestTexts.last?.hasPrefix("GET /retry ") == true)
        #expect(h.pool.openConnections == 1)
    }

    @Test func staleConnectionDoesNotRetryAPost() throws {
        let server = try ScriptedUpstream([
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), .close]
        ])
        let h = UpstreamHarness(port: server.port)
        #expect(h.call().completed)
        #expect(server.closed.wait(timeout: .now() + 5) == .success)
        let r = h.call(.POST, "/once")
        #expect(r.failure == .connectionFailed && r.failedAfterHead == false)
        #expect(server.accepted == 1)
        #expect(h.pool.openConnections == 0)
    }

    @Test func strayBytesAfterAResponseDiscardTheConnection() throws {
        let server = try ScriptedUpstream([
            [
                .readRequest,
                .send(
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"),
                .expectClose
            ],
            [.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nclean")]
        ])
        let h = UpstreamHarness(port: server.port)
        let first = h.call()
        #expect(first.bodyText == "ok" && first.completed)
        h.wait(0.1)
        #expect(h.pool.openConnections == 0)
        // The smuggled "response" never reaches the next request.
        let second = h.call()
        #expect(second.bodyText == "clean")
        #expect(server.accepted == 2)
        _ = server.finished.wait(timeout: .now() + 5)
        #expect(server.clientClosed == [true])
    }

    @Test func connectionRefused() throws {
        // A port that was just free: bound without listening, read, closed.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let port = ScriptedUpstream.localPort(fd)
        close(fd)
        let h = UpstreamHarness(port: port)
        let r = h.call()
        #expect(r.failure == .connectionFailed && r.failedAfterHead == false)
        #expect(h.pool.openConnections == 0)
    }

    /// A listening socket whose accept queue is full drops further SYNs (Linux), so the
    /// connect stays pending: the connect deadline must end it.
    @Test func connectTimeout() throws {
        let listener = try #require(FullBacklogListener())
        let h = UpstreamHarness(port: listener.port, connectTimeout: 0.3)
        let started = Date()
        let r = h.call()
        #expect(r.failure == .connectTimeout && r.failedAfterHead == false)
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(h.pool.openConnections == 0)
        withExtendedLifetime(listener) {}
    }

    @Test func hostNameThroughTheLoopsResolver() throws {
        // "localhost" comes from /etc/hosts through evdns; it may name ::1 first, where
        // nothing listens: the next address is tried.
        let server = try ScriptedUpstream([[.readRequest, .send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]])
        let h = UpstreamHarness(port: server.port, host: "localhost")
        let r = h.call()
        #expect(r.completed && r.bodyText == "ok")
    }

    @Test func unresolvableNameFails() throws {
        let h = UpstreamHarness(port: 80, host: "no-such-host.invalid", connectTimeout: 3)
        let r = h.call(limit: 8)
        #expect(r.failure == .connectionFailed || r.failure == .connectTimeout)
        #expect(h.pool.openConnections == 0)
    }
}

/// A 127.0.0.1 listener with backlog 0 whose accept queue is filled by connections nobody
/// accepts; nil if the kernel still completes connects after a few tries.
final class FullBacklogListener {
    let port: UInt16
    private let fd: Int32
    private var fillers: [Int32] = []

    init?() {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok =
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0 && listen(s, 0) == 0
        fd = s
        port = ScriptedUpstream.localPort(s)
        guard ok else {
            close(s)
            return nil
        }
        for _ in 0..<8 {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0)
            var target = sockaddr_in()
            target.sin_family = sa_family_t(AF_INET)
            target.sin_addr.s_addr = inet_addr("127.0.0.1")
            target.sin_port = port.bigEndian
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(c, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            fillers.append(c)
            var poller = pollfd(fd: c, events: Int16(POLLOUT), revents: 0)
            if poll(&poller, 1, 200) == 0 { return }  // this one hangs: the queue is full
        }
        for c in fillers { close(c) }
        close(fd)
        return nil
    }

    deinit {
        for c in fillers { close(c) }
        close(fd)
    }
}
