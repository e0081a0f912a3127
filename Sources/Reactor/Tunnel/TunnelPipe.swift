import Glibc

/// One direction of a tunnel: bytes from `source` to `sink` as they come, with the frame
/// boundaries followed when the tunnel carries WebSocket frames. Over plain sockets
/// (`direct`) each read lands in the loop's scratch memory and is sent at once (`relay`),
/// queued in `sink`'s output only what the socket does not take; otherwise, and for bytes
/// read before the tunnel began, queue to queue, no copy (`move`). A Close frame of
/// the gateway's own waits in `closeFrame` until the stream is at a boundary (bytes read
/// meanwhile go through the input), then goes out and the direction stops.
/// Loop-thread only; owned by its `Tunnel`.
final class TunnelPipe {
    let source: TunnelEndpoint
    let sink: TunnelEndpoint
    /// nil: opaque bytes (no boundaries are known).
    var frames: WebSocketFrameTracker?
    /// Bytes moved so far.
    private(set) var bytes: UInt64 = 0
    /// Reading from `source` is off because `sink`'s output is over the high-water mark.
    private(set) var blocked = false
    /// The frame to put in at the next boundary.
    var closeFrame: [UInt8]?
    /// Nothing more goes this way (the Close frame went out, or the tunnel is winding down).
    private(set) var stopped = false
    /// `source` relays directly: its bytes come through `relay(_:)`, not its input.
    var direct = false

    /// `masked`: every frame this way must carry a masking key (a client's, RFC 6455 §5.1).
    init(from source: TunnelEndpoint, to sink: TunnelEndpoint, framesFollowed: Bool, masked: Bool = false) {
        self.source = source
        self.sink = sink
        frames = framesFollowed ? WebSocketFrameTracker(requireMask: masked) : nil
    }

    /// A frame this direction refuses came (no masking key, or a broken length): nothing of
    /// it went on.
    var sawRefusedFrame: Bool { frames?.sawRefusedFrame == true }

    /// Moves what `source` holds to `sink`; returns the bytes moved. While a Close frame
    /// waits, only up to the end of the current frame, then the frame.
    @discardableResult
    func move() -> Int {
        if closeFrame != nil { injectIfAtBoundary() }
        let input = source.input
        let length = input.count
        if stopped {
            if length > 0 { input.drain(length) }
            return 0
        }
        var count = length
        if length > 0, frames != nil { count = scan(input, length, stopAtFrameEnd: closeFrame != nil) }
        if count > 0 {
            sink.send(from: input, count: count)
            bytes += UInt64(count)
        }
        if closeFrame != nil { injectIfAtBoundary() }
        updateBlocked()
        return count
    }

    /// Direct relay: `bytes` were just read from `source` (into the loop's scratch memory)
    /// and go to `sink` at once; returns the bytes moved. While a Close frame waits, or
    /// bytes are still in `source`'s input, they join that input and `move()` takes over,
    /// so the order and the boundaries are kept the same as through the input.
    func relay(_ bytes: UnsafeRawBufferPointer) -> Int {
        if stopped { return 0 }
        if closeFrame != nil || source.input.count > 0 {
            source.input.append(bytes)
            return move()
        }
        var count = bytes.count
        if frames != nil { count = frames!.scan(bytes) }
        if count > 0 { sink.send(bytes: UnsafeRawBufferPointer(rebasing: bytes[..<count])) }
        self.bytes += UInt64(count)
        updateBlocked()
        return count
    }

    /// Puts the waiting Close frame in if the stream is between frames, and stops.
    func injectIfAtBoundary() {
        guard let frame = closeFrame, let frames, frames.atBoundary else { return }
        closeFrame = nil
        sink.send(frame)
        stop()
    }

    /// No more bytes this way: reading stops and what comes is dropped.
    func stop() {
        stopped = true
        closeFrame = nil
        source.setReading(false)
        let left = source.input.count
        if left > 0 { source.input.drain(left) }
    }

    /// Backpressure: stop reading `source` while `sink` has more than the high-water mark
    /// queued; read again once it is down to the low-water mark.
    func updateBlocked() {
        guard !stopped else { return }
        let pending = sink.pendingOutput
        if !blocked && pending > Tunnel.highWater {
            blocked = true
            source.setReading(false)
        } else if blocked && pending <= Tunnel.lowWater {
            blocked = false
            source.setReading(true)
        }
    }

    /// Follows the frames in the first `length` bytes of `input`, across its segments.
    private func scan(_ input: ByteQueue, _ length: Int, stopAtFrameEnd: Bool) -> Int {
        guard var tracker = frames else { return length }
        defer { frames = tracker }
        var done = 0
        input.forEachPiece(in: 0..<length) { piece in
            let taken = tracker.scan(piece, stopAtFrameEnd: stopAtFrameEnd)
            done += taken
            return taken == piece.count && !(stopAtFrameEnd && tracker.atBoundary)
        }
        return done
    }
}
