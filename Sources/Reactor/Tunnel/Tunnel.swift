import Glibc

/// Two connections joined after a `101 Switching Protocols` (RFC 9110 §15.2.2, RFC 6455
/// §4): bytes go both ways as they come, each direction with backpressure (a side is not
/// read while the other side's output is over `highWater`), so a slow reader holds at most
/// about `highWater` plus one read in the gateway per direction. Bytes that were already
/// read before the tunnel began (pipelined after the upgrade request, sent after the 101
/// head) are its first bytes.
///
/// It ends in one place, `close(_:)`, with one reason: a side closed or failed, the idle
/// timeout, or an `end` asked from above (a session that ended). With WebSocket framing an
/// `end` first sends each side a Close frame (RFC 6455 §5.5.1) at a frame boundary of that
/// direction (`TunnelPipe`, `WebSocketFrameTracker`), waits for it to be written, then
/// closes both; `graceSeconds` bounds the wait. Transport-agnostic: the sides are
/// `TunnelEndpoint`s. Loop-thread only; whoever opens it keeps it until `onClose`.
public final class Tunnel: TunnelEndpointEvents {
    /// Why a tunnel closed; the raw values are the metrics' and logs' labels.
    public enum CloseReason: String, Sendable, CaseIterable {
        case clientClosed = "client_closed"
        case upstreamClosed = "upstream_closed"
        case clientError = "client_error"
        case upstreamError = "upstream_error"
        case idleTimeout = "idle_timeout"
        case sessionEnded = "session_ended"
        case tokenExpired = "token_expired"
        /// A Shared Signals event revoked the token or session the tunnel was opened with.
        case revoked
        case shutdown
        /// The client broke the WebSocket protocol (an unmasked frame, RFC 6455 §5.1).
        case clientProtocolError = "client_protocol_error"
    }

    /// Bytes carried each way.
    public struct Totals: Sendable, Equatable {
        public var toUpstream: UInt64
        public var toClient: UInt64
    }

    /// Past this many bytes queued for one side, the other side is not read…
    public static let highWater = 256 << 10
    /// …until the queue is down to this.
    public static let lowWater = 64 << 10
    /// How long an ending tunnel waits for frame boundaries and for its last bytes to go out.
    public static let graceSeconds = 5.0

    private enum State: Equatable {
        case open
        /// A side ended its stream: what the other side still has queued goes out, then close.
        case draining(CloseReason)
        /// Close frames wait for boundaries, then for the output to go out.
        case ending(CloseReason)
        case closed
    }

    public let client: TunnelEndpoint
    public let upstream: TunnelEndpoint
    private let loop: EventLoop
    private let toUpstream: TunnelPipe
    private let toClient: TunnelPipe
    private let idleTimeout: Double
    private let clock: () -> Double
    private var state = State.open
    private var lastActivity: Double
    /// Bytes moved since the last idle check (which then stamps `lastActivity`): traffic
    /// costs a flag, not a clock read per message.
    private var active = false
    private var idleTimer: LoopTimer?
    private var graceTimer: LoopTimer?
    /// Called once, when both sides are closed.
    public var onClose: ((CloseReason, Totals) -> Void)?

    /// `webSocket`: the bytes are WebSocket frames (boundaries followed, `end` sends Close
    /// frames); otherwise opaque. `clock`: monotonic seconds (tests move it).
    public init(
        loop: EventLoop, client: TunnelEndpoint, upstream: TunnelEndpoint, webSocket: Bool, idleTimeout: Double,
        clock: @escaping () -> Double = Tunnel.monotonic
    ) {
        loop.assertInLoop()
        self.loop = loop
        self.client = client
        self.upstream = upstream
        self.idleTimeout = idleTimeout
        self.clock = clock
        lastActivity = clock()
        toUpstream = TunnelPipe(from: client, to: upstream, framesFollowed: webSocket, masked: true)
        toClient = TunnelPipe(from: upstream, to: client, framesFollowed: webSocket)
    }

    /// The sides hold their events reference without counting it: it must not outlive us.
    deinit {
        client.events = nil
        upstream.events = nil
    }

    public var totals: Totals { Totals(toUpstream: toUpstream.bytes, toClient: toClient.bytes) }
    public var isClosed: Bool { state == .closed }

    /// Starts moving bytes, the ones already read first.
    public func start() {
        loop.assertInLoop()
        client.events = self
        upstream.events = self
        toUpstream.direct = client.relayDirectly(true)
        toClient.direct = upstream.relayDirectly(true)
        client.setReading(true)
        upstream.setReading(true)
        // Checked a few times per timeout: traffic costs a flag, not a timer update.
        // Unowned: the tunnel owns its timers, and they are cancelled with it (a weak
        // capture would put every retain of the tunnel on the runtime's slow path).
        idleTimer = LoopTimer(loop: loop, seconds: min(max(idleTimeout / 8, 0.05), 30), repeating: true) {
            [unowned(unsafe) self] in
            self.idleCheck()
        }
        pump(toUpstream)
        pump(toClient)
    }

    // MARK: ending

    /// Ends the tunnel on the gateway's initiative: each side gets a Close frame with `code`
    /// and `phrase` (WebSocket; at a frame boundary), then both close. Opaque tunnels close
    /// at once.
    public func end(_ reason: CloseReason, code: UInt16, phrase: String) {
        loop.assertInLoop()
        switch state {
        case .open, .draining: break
        case .ending, .closed: return
        }
        guard toUpstream.frames != nil else {
            close(reason)
            return
        }
        state = .ending(reason)
        toUpstream.closeFrame = WebSocketCloseFrame.bytes(code: code, reason: phrase, masked: true)
        toClient.closeFrame = WebSocketCloseFrame.bytes(code: code, reason: phrase, masked: false)
        graceTimer = LoopTimer(loop: loop, seconds: Self.graceSeconds) { [unowned(unsafe) self] in self.close(reason) }
        for pipe in [toUpstream, toClient] {
            pipe.move()
            // A frame in progress must be read to its end before the Close can follow it
            // (unless its sink is over the high-water mark: backpressure stays on).
            if !pipe.stopped && !pipe.blocked { pipe.source.setReading(true) }
        }
        closeIfDone()
    }

    /// Closes both sides now; `onClose` runs once.
    public func close(_ reason: CloseReason) {
        guard state != .closed else { return }
        state = .closed
        idleTimer?.cancel()
        idleTimer = nil
        graceTimer?.cancel()
        graceTimer = nil
        client.events = nil
        upstream.events = nil
        client.close()
        upstream.close()
        let done = onClose
        onClose = nil
        // Whoever holds the tunnel lets go in `onClose`: alive until this call is over.
        withExtendedLifetime(self) { done?(reason, totals) }
    }

    /// Ending or draining: close once nothing more is to be written.
    private func closeIfDone() {
        let reason: CloseReason
        switch state {
        case .ending(let r):
            guard toUpstream.stopped && toClient.stopped else { return }
            reason = r
        case .draining(let r):
            reason = r
        case .open, .closed:
            return
        }
        if client.pendingOutput == 0 && upstream.pendingOutput == 0 { close(reason) }
    }

    // MARK: moving bytes

    private func pump(_ pipe: TunnelPipe) {
        if pipe.move() > 0 { active = true }
        if pipe.sawRefusedFrame { refuseClientFrame() }
        if state != .open { closeIfDone() }
    }

    /// RFC 6455 §5.1: "The server MUST close the connection upon receiving a frame that is
    /// not masked", and MAY send Close 1002 (protocol error) first; a broken length is refused
    /// the same way (§5.2). The frame itself never reaches the upstream; the client gets the
    /// Close at its direction's next boundary.
    private func refuseClientFrame() {
        // Whatever the state, nothing more is read from the client: a tunnel already ending
        // would otherwise keep reading bytes its refused frame holds back, for the grace time.
        toUpstream.stop()
        guard state == .open else { return }
        let reason = CloseReason.clientProtocolError
        state = .ending(reason)
        toClient.closeFrame = WebSocketCloseFrame.bytes(
            code: WebSocketCloseFrame.protocolError, reason: "frames from a client must be masked", masked: false)
        graceTimer?.cancel()
        graceTimer = LoopTimer(loop: loop, seconds: Self.graceSeconds) { [unowned(unsafe) self] in self.close(reason) }
        toClient.move()
        if !toClient.stopped && !toClient.blocked { toClient.source.setReading(true) }
    }

    private func pipe(from endpoint: TunnelEndpoint) -> TunnelPipe { endpoint === client ? toUpstream : toClient }
    private func pipe(to endpoint: TunnelEndpoint) -> TunnelPipe { endpoint === client ? toClient : toUpstream }

    public func endpointReadable(_ endpoint: TunnelEndpoint) {
        loop.assertInLoop()
        guard state != .closed else { return }
        let pipe = pipe(from: endpoint)
        if pipe.direct { receive(pipe) } else { pump(pipe) }
    }

    /// Direct relay: one read from the pipe's source into the loop's scratch memory, passed
    /// on at once (`TunnelPipe.relay`).
    private func receive(_ pipe: TunnelPipe) {
        let buffer = loop.relayBuffer
        switch pipe.source.receive(into: buffer) {
        case .bytes(let n):
            if pipe.relay(UnsafeRawBufferPointer(rebasing: buffer[..<n])) > 0 { active = true }
            if pipe.sawRefusedFrame { refuseClientFrame() }
            if state != .open { closeIfDone() }
        case .wouldBlock:
            break
        case .ended:
            endpointEnded(pipe.source)
        case .failed:
            endpointFailed(pipe.source)
        }
    }

    public func endpointWrote(_ endpoint: TunnelEndpoint) {
        loop.assertInLoop()
        guard state != .closed else { return }
        let pipe = pipe(to: endpoint)
        pipe.updateBlocked()
        if state != .open { closeIfDone() }
    }

    public func endpointEnded(_ endpoint: TunnelEndpoint) {
        loop.assertInLoop()
        guard state != .closed else { return }
        let reason: CloseReason = endpoint === client ? .clientClosed : .upstreamClosed
        // What the side sent before its end goes on; then nothing more is read from either
        // side, and the tunnel closes once the last bytes are out.
        pump(pipe(from: endpoint))
        guard state != .closed else { return }
        if state == .open {
            state = .draining(reason)
            graceTimer = LoopTimer(loop: loop, seconds: Self.graceSeconds) { [unowned(unsafe) self] in
                self.close(reason)
            }
        }
        toUpstream.stop()
        toClient.stop()
        closeIfDone()
    }

    public func endpointFailed(_ endpoint: TunnelEndpoint) {
        loop.assertInLoop()
        close(endpoint === client ? .clientError : .upstreamError)
    }

    // MARK: idle timeout

    /// No byte either way for `idleTimeout` (to within an eighth of it): closed.
    private func idleCheck() {
        guard state != .closed else { return }
        let now = clock()
        if active {
            active = false
            lastActivity = now
        } else if now - lastActivity >= idleTimeout {
            close(.idleTimeout)
        }
    }

    /// Monotonic seconds.
    public static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
