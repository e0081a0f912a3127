/// Follows the frame boundaries of one direction of a WebSocket connection as its bytes
/// pass (RFC 6455 §5.2), reading only each frame's header — FIN/opcode, the payload length
/// (7 bits, or 16 or 64 bits after 126 or 127) and whether a 4-byte masking key follows —
/// and skipping its payload by count. The gateway pipes frames untouched; it only needs to
/// know where one ends, so that a frame of its own (a Close) is never put inside another.
/// Control frames may go between the fragments of a message (RFC 6455 §5.4), so every
/// frame boundary is a place for one. A pure, byte-fed state machine: fed any split of the
/// stream, it ends in the same state.
///
/// With `requireMask` (the client's direction) a frame without a masking key stops the
/// stream at that frame's first byte: RFC 6455 §5.1, "The server MUST close the connection
/// upon receiving a frame that is not masked." So does a 64-bit length with its top bit set
/// there: followed no further, it would let whatever comes after it through unread.
public struct WebSocketFrameTracker: Sendable, Equatable {
    private enum Phase: Sendable, Equatable {
        /// Before a frame's first byte: a boundary.
        case start
        /// The MASK bit and 7-bit length are next.
        case length
        /// `left` bytes of the 16- or 64-bit extended length are next.
        case extendedLength(left: Int)
        case maskingKey(left: Int)
        case payload
        /// A 64-bit length with its most significant bit set (RFC 6455 §5.2: "the most
        /// significant bit MUST be 0"): the stream cannot be followed any further.
        case broken
        /// An unmasked frame, or a broken length, where masking is required: nothing from it
        /// on is taken.
        case refused
    }

    private let requireMask: Bool
    private var phase = Phase.start
    private var masked = false
    private var remaining: UInt64 = 0
    private var opcode: UInt8 = 0
    /// Whole frames seen.
    public private(set) var frames = 0
    /// A Close frame (opcode 0x8) has ended in this direction.
    public private(set) var sawClose = false

    public init(requireMask: Bool = false) { self.requireMask = requireMask }

    /// No frame is partly through: a whole frame may be put here.
    public var atBoundary: Bool { phase == .start }
    /// The stream broke the framing rules: no boundary will come.
    public var isBroken: Bool { phase == .broken }
    /// A frame came without the masking key `requireMask` asks for, or with a broken length;
    /// `scan` took none of it that it saw (only header bytes that came in earlier calls went on).
    public var sawRefusedFrame: Bool { phase == .refused }

    /// Follows `bytes`, the next bytes of the stream, and returns how many it took: all of
    /// them, or with `stopAtFrameEnd` only up to the end of the first frame that ends in them,
    /// or up to the first byte of an unmasked frame that `requireMask` refuses. A broken
    /// stream takes everything (nothing more is learnt from it).
    public mutating func scan(_ bytes: UnsafeRawBufferPointer, stopAtFrameEnd: Bool = false) -> Int {
        var i = 0
        let n = bytes.count
        // Where the frame being read began in `bytes` (0 if in an earlier call).
        var frameStart = 0
        while i < n {
            switch phase {
            case .broken:
                return n
            case .refused:
                return 0
            case .start:
                frameStart = i
                if let end = wholeHeader(bytes, at: i) {
                    if requireMask && !masked {
                        phase = .refused
                        return frameStart
                    }
                    i = end
                    if payloadStarts() && stopAtFrameEnd { return i }
                    continue
                }
                opcode = bytes[i] & 0x0F
                i += 1
                phase = .length
            case .length:
                let b = bytes[i]
                masked = b & 0x80 != 0
                if requireMask && !masked {
                    phase = .refused
                    return frameStart
                }
                i += 1
                switch b & 0x7F {
                case 126:
                    remaining = 0
                    phase = .extendedLength(left: 2)
                case 127:
                    remaining = 0
                    phase = .extendedLength(left: 8)
                default:
                    remaining = UInt64(b & 0x7F)
                    if headerDone() && stopAtFrameEnd { return i }
                }
            case .extendedLength(let left):
                if left == 8 && bytes[i] & 0x80 != 0 {
                    phase = requireMask ? .refused : .broken
                    return requireMask ? frameStart : n
                }
                remaining = remaining << 8 | UInt64(bytes[i])
                i += 1
                if left > 1 {
                    phase = .extendedLength(left: left - 1)
                } else if headerDone() && stopAtFrameEnd {
                    return i
                }
            case .maskingKey(let left):
                i += 1
                if left > 1 {
                    phase = .maskingKey(left: left - 1)
                } else if payloadStarts() && stopAtFrameEnd {
                    return i
                }
            case .payload:
                let take = Int(min(UInt64(n - i), remaining))
                i += take
                remaining -= UInt64(take)
                if remaining == 0 {
                    frameEnded()
                    if stopAtFrameEnd { return i }
                }
            }
        }
        return n
    }

    /// A header that is all in `bytes` from `start` (the usual case) is read at once: the
    /// opcode, mask bit and length are taken and the offset after the header is returned.
    /// nil: it is split across reads, or its 64-bit length is invalid — the byte-by-byte
    /// states take it.
    private mutating func wholeHeader(_ bytes: UnsafeRawBufferPointer, at start: Int) -> Int? {
        guard bytes.count - start >= 2 else { return nil }
        let second = bytes[start + 1]
        let short = second & 0x7F
        let extended = short == 126 ? 2 : short == 127 ? 8 : 0
        let size = 2 + extended + (second & 0x80 != 0 ? 4 : 0)
        guard bytes.count - start >= size, extended < 8 || bytes[start + 2] & 0x80 == 0 else { return nil }
        var length = UInt64(short)
        if extended > 0 {
            length = 0
            for k in 0..<extended { length = length << 8 | UInt64(bytes[start + 2 + k]) }
        }
        opcode = bytes[start] & 0x0F
        masked = second & 0x80 != 0
        remaining = length
        return start + size
    }

    /// The length is known: the masking key follows, or the payload. True if the frame
    /// ended with its header (an empty, unmasked payload).
    private mutating func headerDone() -> Bool {
        if masked {
            phase = .maskingKey(left: 4)
            return false
        }
        return payloadStarts()
    }

    /// True if the frame ended here (no payload).
    private mutating func payloadStarts() -> Bool {
        if remaining == 0 {
            frameEnded()
            return true
        }
        phase = .payload
        return false
    }

    private mutating func frameEnded() {
        phase = .start
        frames += 1
        if opcode == 0x8 { sawClose = true }
    }
}
