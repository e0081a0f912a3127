import Testing

@testable import Reactor

/// The tunnel between two in-memory sides: bytes both ways, the bytes read before it
/// began, backpressure, ends, the idle timeout with a moved clock, and Close frames put in
/// only at frame boundaries.
@Suite("Tunnel")
struct TunnelTests {
    final class Clock: @unchecked Sendable {
        var now = 1000.0
    }

    struct Setup {
        let loop = EventLoop()
        let client = InMemoryTunnelEndpoint()
        let upstream = InMemoryTunnelEndpoint()
        let clock = Clock()
        var closed: [(Tunnel.CloseReason, Tunnel.Totals)] = []
    }

    final class Box: @unchecked Sendable {
        var closes: [(Tunnel.CloseReason, Tunnel.Totals)] = []
    }

    static func tunnel(_ s: Setup, webSocket: Bool = true, idle: Double = 60, box: Box) -> Tunnel {
        let t = Tunnel(
            loop: s.loop, client: s.client, upstream: s.upstream, webSocket: webSocket, idleTimeout: idle,
            clock: { s.clock.now })
        t.onClose = { reason, totals in box.closes.append((reason, totals)) }
        return t
    }

    static func frame(_ payload: [UInt8], masked: Bool) -> [UInt8] {
        WebSocketFrameTrackerTests.frame(payload: payload.count, masked: masked)
    }

    @Test func bytesReadBeforeTheTunnelGoFirst() {
        let s = Setup()
        let box = Box()
        s.client.deliver([1, 2, 3])
        s.upstream.deliver([9, 8])
        let t = Self.tunnel(s, webSocket: false, box: box)
        t.start()
        #expect(s.upstream.takeReceived() == [1, 2, 3])
        #expect(s.client.takeReceived() == [9, 8])
        s.client.deliver([4])
        s.upstream.deliver([7])
        #expect(s.upstream.takeReceived() == [4])
        #expect(s.client.takeReceived() == [7])
        #expect(t.totals == Tunnel.Totals(toUpstream: 4, toClient: 3))
        t.close(.shutdown)
        #expect(s.client.isClosed && s.upstream.isClosed)
        #expect(box.closes.count == 1 && box.closes[0].0 == .shutdown)
    }

    @Test func aSlowReaderStopsTheOtherSide() {
        let s = Setup()
        let box = Box()
        s.client.accepting = 0
        let t = Self.tunnel(s, webSocket: false, box: box)
        t.start()
        let chunk = [UInt8](repeating: 7, count: 64 << 10)
        var sent = 0
        while s.upstream.reading && sent < 4 << 20 {
            s.upstream.deliver(chunk)
            sent += chunk.count
        }
        // Reading stopped just past the high-water mark: the gateway holds a bounded amount.
        #expect(!s.upstream.reading)
        #expect(s.client.pendingOutput > Tunnel.highWater && s.client.pendingOutput <= Tunnel.highWater + chunk.count)
        // Draining to the low-water mark resumes it.
        s.client.drain(allowing: s.client.pendingOutput - Tunnel.lowWater)
        #expect(s.upstream.reading)
        s.client.drain(allowing: 1 << 30)
        #expect(s.client.takeReceived().count == sent)
        t.close(.shutdown)
    }

    @Test func aSideThatEndsClosesTheTunnelOnceTheRestIsOut() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, webSocket: false, box: box)
        t.start()
        s.upstream.accepting = 0
        s.client.deliver([1, 2, 3])
        s.client.peerEnds()
        #expect(box.closes.isEmpty)
        s.upstream.drain(allowing: 10)
        #expect(s.upstream.takeReceived() == [1, 2, 3])
        #expect(box.closes.count == 1 && box.closes[0].0 == .clientClosed)
        #expect(t.isClosed)
    }

    @Test func aFailureClosesAtOnce() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, webSocket: false, box: box)
        t.start()
        s.upstream.fail()
        #expect(box.closes.map(\.0) == [.upstreamError])
        #expect(s.client.isClosed)
    }

    @Test func idleTimeoutUsesTheTunnelsClock() async throws {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, webSocket: false, idle: 0.4, box: box)
        t.start()
        // Traffic moves the deadline; the check runs on a loop timer, the clock decides.
        s.clock.now += 0.3
        s.client.deliver([1])
        s.clock.now += 0.3
        runLoop(s.loop, seconds: 0.2)
        #expect(box.closes.isEmpty)
        // Activity is stamped at the check that sees it: quiet for a whole timeout after that.
        s.clock.now += 0.5
        runLoop(s.loop, seconds: 0.2)
        #expect(box.closes.map(\.0) == [.idleTimeout])
        #expect(t.isClosed)
    }

    @Test func endPutsCloseFramesAtFrameBoundariesOnly() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, box: box)
        t.start()
        // A client frame is half through when the session ends.
        let clientFrame = Self.frame([UInt8](repeating: 5, count: 300), masked: true)
        s.client.deliver(Array(clientFrame[0..<100]))
        // The upstream is between frames.
        s.upstream.deliver(Self.frame([1, 2, 3], masked: false))
        _ = s.upstream.takeReceived()
        _ = s.client.takeReceived()
        t.end(.sessionEnded, code: WebSocketCloseFrame.policyViolation, phrase: "session ended")
        // The client's Close went at once; the upstream's waits for the frame's end.
        #expect(
            s.client.takeReceived() == WebSocketCloseFrame.bytes(code: 1008, reason: "session ended", masked: false))
        #expect(s.upstream.takeReceived().isEmpty)
        #expect(box.closes.isEmpty)
        // The rest of the frame and the start of the next come in one read: the frame is
        // finished, the Close follows it, the next frame is dropped.
        s.client.deliver(Array(clientFrame[100...]) + Self.frame([9], masked: true))
        let got = s.upstream.takeReceived()
        let rest = clientFrame.count - 100
        #expect(Array(got[0..<rest]) == Array(clientFrame[100...]))
        let close = Array(got[rest...])
        #expect(close.count == 2 + 4 + 15 && close[0] == 0x88 && close[1] == 0x80 | 15)
        #expect(box.closes.map(\.0) == [.sessionEnded])
        #expect(s.client.isClosed && s.upstream.isClosed)
    }

    @Test func endWaitsForTheCloseFramesToBeWritten() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, box: box)
        t.start()
        s.client.accepting = 0
        t.end(.sessionEnded, code: WebSocketCloseFrame.policyViolation, phrase: "session ended")
        #expect(box.closes.isEmpty)
        s.client.drain(allowing: 100)
        #expect(box.closes.map(\.0) == [.sessionEnded])
    }

    /// RFC 6455 §5.1: an unmasked frame from the client never reaches the upstream; the
    /// client gets Close 1002 and the tunnel closes. The masked frame before it went on.
    @Test func anUnmaskedClientFrameEndsTheTunnelWithAProtocolError() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, box: box)
        t.start()
        let good = Self.frame([1, 2, 3], masked: true)
        s.client.deliver(good + Self.frame([0x47, 0x45, 0x54], masked: false))
        #expect(s.upstream.takeReceived() == good)
        #expect(
            s.client.takeReceived()
                == WebSocketCloseFrame.bytes(code: 1002, reason: "frames from a client must be masked", masked: false))
        #expect(box.closes.map(\.0) == [.clientProtocolError])
        #expect(s.client.isClosed && s.upstream.isClosed)
    }

    /// The upstream's frames are unmasked, as a server's must be: they pass.
    @Test func unmaskedServerFramesPass() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, box: box)
        t.start()
        let frames = Self.frame([1], masked: false) + Self.frame([2, 3], masked: false)
        s.upstream.deliver(frames)
        #expect(s.client.takeReceived() == frames)
        #expect(box.closes.isEmpty)
        t.close(.shutdown)
    }

    @Test func opaqueTunnelsEndAtOnce() {
        let s = Setup()
        let box = Box()
        let t = Self.tunnel(s, webSocket: false, box: box)
        t.start()
        t.end(.sessionEnded, code: 1008, phrase: "x")
        #expect(box.closes.map(\.0) == [.sessionEnded])
        #expect(s.client.takeReceived().isEmpty && s.upstream.takeReceived().isEmpty)
    }
}

/// Runs the loop for about `seconds` (its timers fire).
func runLoop(_ loop: EventLoop, seconds: Double) {
    let stop = LoopTimer(loop: loop, seconds: seconds) { loop.stop() }
    loop.run()
    stop.cancel()
}
