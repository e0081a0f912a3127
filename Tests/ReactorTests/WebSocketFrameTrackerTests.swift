import Testing

@testable import Reactor

/// Frame boundaries of a WebSocket byte stream (RFC 6455 §5.2), fed in every split.
@Suite("WebSocketFrameTracker")
struct WebSocketFrameTrackerTests {
    /// One frame: FIN + opcode, the length in its three encodings, an optional mask.
    static func frame(opcode: UInt8 = 0x2, fin: Bool = true, payload: Int, masked: Bool) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let m: UInt8 = masked ? 0x80 : 0
        if payload < 126 {
            out.append(m | UInt8(payload))
        } else if payload <= 0xFFFF {
            out += [m | 126, UInt8(payload >> 8), UInt8(payload & 0xFF)]
        } else {
            out.append(m | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8((UInt64(payload) >> UInt64(shift)) & 0xFF))
            }
        }
        if masked { out += [0x11, 0x22, 0x33, 0x44] }
        // Payload bytes that look like headers, so a tracker reading them as such would fail.
        out += [UInt8](repeating: 0x81, count: payload)
        return out
    }

    /// A stream of frames of every length class, masked and not, with control frames
    /// between fragments; and the offsets where each frame ends.
    static func stream(masked: Bool) -> (bytes: [UInt8], ends: [Int]) {
        let frames = [
            frame(opcode: 0x1, fin: false, payload: 5, masked: masked),
            frame(opcode: 0x9, payload: 0, masked: masked),
            frame(opcode: 0x0, fin: true, payload: 125, masked: masked),
            frame(payload: 126, masked: masked),
            frame(payload: 65535, masked: masked),
            frame(payload: 65536, masked: masked),
            frame(opcode: 0x8, payload: 2, masked: masked)
        ]
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for f in frames {
            bytes += f
            ends.append(bytes.count)
        }
        return (bytes, ends)
    }

    @Test(arguments: [false, true], [1, 2, 3, 7, 13, 64, 4096, 1 << 20])
    func boundariesAreFoundWhateverTheSplit(masked: Bool, piece: Int) {
        let (bytes, ends) = Self.stream(masked: masked)
        var tracker = WebSocketFrameTracker()
        var offset = 0
        var boundaries: [Int] = []
        bytes.withUnsafeBytes { all in
            while offset < all.count {
                let upTo = min(offset + piece, all.count)
                let taken = tracker.scan(UnsafeRawBufferPointer(rebasing: all[offset..<upTo]))
                #expect(taken == upTo - offset)
                offset = upTo
                if tracker.atBoundary { boundaries.append(offset) }
            }
        }
        #expect(tracker.frames == ends.count)
        #expect(tracker.sawClose)
        #expect(tracker.atBoundary)
        // Every boundary seen is a real frame end, and the last is the stream's end.
        #expect(boundaries.allSatisfy(ends.contains))
        #expect(boundaries.last == bytes.count)
    }

    @Test(arguments: [false, true])
    func stopAtFrameEndStopsAtEachEnd(masked: Bool) {
        let (bytes, ends) = Self.stream(masked: masked)
        var tracker = WebSocketFrameTracker()
        var offset = 0
        var found: [Int] = []
        bytes.withUnsafeBytes { all in
            while offset < all.count {
                offset += tracker.scan(UnsafeRawBufferPointer(rebasing: all[offset...]), stopAtFrameEnd: true)
                #expect(tracker.atBoundary)
                found.append(offset)
            }
        }
        #expect(found == ends)
    }

    @Test func midFrameIsNotABoundary() {
        let f = Self.frame(payload: 300, masked: true)
        var tracker = WebSocketFrameTracker()
        for cut in [1, 2, 4, 8, 100, f.count - 1] {
            tracker = WebSocketFrameTracker()
            f.withUnsafeBytes { _ = tracker.scan(UnsafeRawBufferPointer(rebasing: $0[0..<cut])) }
            #expect(!tracker.atBoundary, "cut at \(cut)")
        }
    }

    /// RFC 6455 §5.1: with `requireMask` (the client's direction), the first unmasked frame
    /// stops the stream at its first byte, however the bytes are split; the masked frames
    /// before it are taken whole.
    @Test(arguments: [1, 2, 3, 5, 64, 1 << 20])
    func anUnmaskedClientFrameIsTakenNoneOf(piece: Int) {
        let masked = Self.stream(masked: true).bytes
        let unmasked = Self.frame(payload: 10, masked: false)
        let bytes = masked + unmasked + Self.frame(payload: 3, masked: true)
        var tracker = WebSocketFrameTracker(requireMask: true)
        var taken = 0
        var offset = 0
        bytes.withUnsafeBytes { all in
            while offset < all.count {
                let upTo = min(offset + piece, all.count)
                taken += tracker.scan(UnsafeRawBufferPointer(rebasing: all[offset..<upTo]))
                offset = upTo
            }
        }
        #expect(tracker.sawRefusedFrame && !tracker.atBoundary)
        // None of the unmasked frame went on, but its first byte when a piece ended right
        // after it (the mask bit comes in the next byte).
        let firstByteAlone = (masked.count + 1) % piece == 0
        #expect(taken == masked.count + (firstByteAlone ? 1 : 0))
        // Nothing more is ever taken.
        #expect(bytes.withUnsafeBytes { tracker.scan($0) } == 0)
    }

    /// A masked frame with a broken 64-bit length is refused like an unmasked one where
    /// masking is required: followed no further, the bytes after it would pass unread.
    @Test(arguments: [1, 2, 3, 64])
    func aBrokenLengthIsRefusedWhereMaskingIsRequired(piece: Int) {
        let good = Self.frame(payload: 3, masked: true)
        let bad: [UInt8] = [0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4]
        let bytes = good + bad + Array("GET /admin HTTP/1.1\r\n\r\n".utf8)
        var tracker = WebSocketFrameTracker(requireMask: true)
        var taken = 0
        var offset = 0
        bytes.withUnsafeBytes { all in
            while offset < all.count {
                let upTo = min(offset + piece, all.count)
                taken += tracker.scan(UnsafeRawBufferPointer(rebasing: all[offset..<upTo]))
                offset = upTo
            }
        }
        #expect(tracker.sawRefusedFrame && !tracker.isBroken)
        // At most the refused frame's opcode and length bytes, when they came in earlier reads.
        #expect(taken >= good.count && taken <= good.count + 2, "\(taken)")
    }

    @Test func maskedFramesPassWhenMaskingIsRequired() {
        let (bytes, ends) = Self.stream(masked: true)
        var tracker = WebSocketFrameTracker(requireMask: true)
        #expect(bytes.withUnsafeBytes { tracker.scan($0) } == bytes.count)
        #expect(tracker.frames == ends.count && !tracker.sawRefusedFrame)
        // Without the requirement, unmasked frames are followed as before (the server's side).
        var serverSide = WebSocketFrameTracker()
        let plain = Self.stream(masked: false).bytes
        #expect(plain.withUnsafeBytes { serverSide.scan($0) } == plain.count && !serverSide.sawRefusedFrame)
    }

    @Test func a64BitLengthWithTheTopBitSetBreaksTheStream() {
        var tracker = WebSocketFrameTracker()
        let bad: [UInt8] = [0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 0xAA]
        let taken = bad.withUnsafeBytes { tracker.scan($0) }
        #expect(taken == bad.count)
        #expect(tracker.isBroken && !tracker.atBoundary)
    }

    @Test func closeFramesAreMaskedOnlyTowardsTheServer() {
        let toClient = WebSocketCloseFrame.bytes(code: 1008, reason: "session ended", masked: false)
        #expect(toClient == [0x88, 15, 0x03, 0xF0] + Array("session ended".utf8))
        let toServer = WebSocketCloseFrame.bytes(code: 1008, reason: "session ended", masked: true)
        #expect(toServer[0] == 0x88 && toServer[1] == 0x80 | 15 && toServer.count == 2 + 4 + 15)
        let key = Array(toServer[2..<6])
        let unmasked = toServer[6...].enumerated().map { $0.element ^ key[$0.offset & 3] }
        #expect(unmasked == [0x03, 0xF0] + Array("session ended".utf8))
        // A fresh key each time (RFC 6455 §5.3).
        let again = WebSocketCloseFrame.bytes(code: 1008, reason: "session ended", masked: true)
        #expect(
            Array(again[2..<6]) != key
                || Array(WebSocketCloseFrame.bytes(code: 1008, reason: "x", masked: true)[2..<6]) != key)
        var tracker = WebSocketFrameTracker()
        _ = toServer.withUnsafeBytes { tracker.scan($0) }
        #expect(tracker.atBoundary && tracker.sawClose && tracker.frames == 1)
    }
}
