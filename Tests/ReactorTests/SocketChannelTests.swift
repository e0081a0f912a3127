import Glibc
import Testing

@testable import Reactor

/// A channel over one end of a socket pair, on a real loop: the test plays the peer.
@Suite("SocketChannel: one socket's events, interest, deadline and close")
struct SocketChannelTests {
    /// Records what the channel reported and stops the loop when told to.
    final class Recorder: SocketChannelHandler {
        var log: [String] = []
        var onReadable: ((SocketEvents) -> Void)?
        var onWritable: ((SocketEvents) -> Void)?
        var onDeadline: (() -> Void)?
        func channelReadable(_ events: SocketEvents) {
            log.append("read")
            onReadable?(events)
        }
        func channelWritable(_ events: SocketEvents) {
            log.append(events.contains(.writable) ? "write" : "write-timeout")
            onWritable?(events)
        }
        func channelDeadlinePassed() {
            log.append("deadline")
            onDeadline?()
        }
    }

    struct Pair {
        let loop = EventLoop()
        let channel: SocketChannel
        let peer: Int32
        let recorder = Recorder()

        init(watch: SocketChannel.Watch = .level, writePersists: Bool = true) throws {
            var fds: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
            peer = fds[1]
            channel = SocketChannel(base: loop.base)
            channel.handler = recorder
            try #require(channel.attach(fds[0], watch: watch, writePersists: writePersists))
        }

        /// Runs the loop until the handler stops it, or at most `seconds`.
        func run(atMost seconds: Double = 2) {
            loop.schedule(after: seconds) { loop.stop() }
            loop.run()
        }

        func peerSends(_ text: String) {
            _ = text.withCString { Glibc.send(peer, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
    }

    @Test func readInterestReportsThePeersBytesAndOffSilencesThem() throws {
        let pair = try Pair()
        defer { Glibc.close(pair.peer) }
        pair.recorder.onReadable = { _ in
            var byte: UInt8 = 0
            _ = Glibc.read(pair.channel.fd, &byte, 1)
            pair.loop.stop()
        }
        pair.peerSends("x")
        #expect(pair.channel.setReadInterest(true))
        #expect(pair.channel.readArmed)
        pair.run()
        #expect(pair.recorder.log == ["read"])

        pair.channel.setReadInterest(false)
        pair.peerSends("y")
        pair.run(atMost: 0.1)
        #expect(pair.recorder.log == ["read"], "no read interest, no read event")
    }

    @Test func aScheduledWriteRunsOnceThisTurnAndAFlushCanTakeItBack() throws {
        let pair = try Pair()
        defer { Glibc.close(pair.peer) }
        pair.channel.scheduleWrite()
        pair.channel.scheduleWrite()
        #expect(pair.channel.writeScheduled)
        pair.run(atMost: 0.1)
        #expect(pair.recorder.log == ["write"], "scheduled twice, run once")
        #expect(!pair.channel.writeScheduled && !pair.channel.writeArmed)

        pair.channel.scheduleWrite()
        pair.channel.disarmWrite()
        pair.run(atMost: 0.1)
        #expect(pair.recorder.log == ["write"], "a disarmed schedule does not run")
    }

    @Test func anArmedPersistentWriteStaysArmedUntilDisarmed() throws {
        let pair = try Pair()
        defer { Glibc.close(pair.peer) }
        var runs = 0
        pair.recorder.onWritable = { _ in
            runs += 1
            if runs == 3 {
                pair.channel.disarmWrite()
                pair.loop.stop()
            }
        }
        #expect(pair.channel.armWrite())
        pair.run()
        #expect(runs == 3)
        #expect(!pair.channel.writeArmed)
    }

    @Test func aOneShotWriteFiresOnceThenIsIdle() throws {
        let pair = try Pair(writePersists: false)
        defer { Glibc.close(pair.peer) }
        #expect(pair.channel.armWrite(timeout: 5))
        pair.run(atMost: 0.1)
        #expect(pair.recorder.log == ["write"])
        #expect(!pair.channel.writeArmed)
    }

    @Test func aOneShotWriteThatWaitsTooLongReportsTheTimeout() throws {
        let pair = try Pair(writePersists: false)
        defer { Glibc.close(pair.peer) }
        // Fill the socket so that it is not writable.
        let block = [UInt8](repeating: 0, count: 1 << 16)
        while block.withUnsafeBytes({ Glibc.send(pair.channel.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0
        {}
        pair.recorder.onWritable = { _ in pair.loop.stop() }
        #expect(pair.channel.armWrite(timeout: 0.05))
        pair.run()
        #expect(pair.recorder.log == ["write-timeout"])
    }

    @Test func theDeadlinePassesOnceAndMovingItOnDelaysIt() throws {
        let pair = try Pair()
        defer { Glibc.close(pair.peer) }
        pair.channel.setDeadline(0.05)
        pair.channel.setDeadline(0.2)
        let start = LazyDeadline.now()
        var passedAt = 0.0
        pair.recorder.onDeadline = {
            passedAt = LazyDeadline.now()
            pair.loop.stop()
        }
        pair.run()
        #expect(pair.recorder.log == ["deadline"])
        #expect(passedAt - start >= 0.15, "the moved deadline, not the first")

        pair.channel.setDeadline(0.05)
        pair.channel.dropDeadline()
        pair.run(atMost: 0.2)
        #expect(pair.recorder.log == ["deadline"], "a dropped deadline does not pass")
    }

    @Test func closeClosesTheFdOnceAndNoEventFollows() throws {
        let pair = try Pair()
        defer { Glibc.close(pair.peer) }
        #expect(pair.channel.setReadInterest(true))
        pair.channel.scheduleWrite()
        pair.channel.setDeadline(0.01)
        pair.channel.close()
        pair.channel.close()
        #expect(!pair.channel.isOpen && pair.channel.fd == -1)
        #expect(!pair.channel.readArmed && !pair.channel.writeScheduled)
        pair.peerSends("x")
        pair.run(atMost: 0.1)
        #expect(pair.recorder.log.isEmpty)
        // The peer sees the close.
        var byte: UInt8 = 0
        #expect(Glibc.read(pair.peer, &byte, 1) == 0)
        #expect(!pair.channel.setReadInterest(true), "nothing to watch after the close")
    }

    @Test func anEdgeWatchReportsThePeersEndAndMovesToLevelKeepingItsInterest() throws {
        let pair = try Pair(watch: .edge)
        try #require(SocketChannel.edgeSupported(base: pair.loop.base), "epoll reports edges")
        defer { Glibc.close(pair.peer) }
        var seen: SocketEvents = []
        pair.recorder.onReadable = { events in
            seen = events
            pair.loop.stop()
        }
        #expect(pair.channel.setReadInterest(true))
        pair.peerSends("x")
        shutdown(pair.peer, Int32(SHUT_WR))
        pair.run()
        #expect(seen.contains(.readable) && seen.contains(.peerEnded))

        #expect(pair.channel.watchByLevel())
        #expect(pair.channel.watch == .level && pair.channel.readArmed)
        // By level, the unread byte is reported again on the next wait.
        pair.recorder.log = []
        pair.run()
        #expect(pair.recorder.log == ["read"])
    }
}
