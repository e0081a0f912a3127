/// WebSocket frame boundaries through `WebSocketFrameTracker`.
extension StreamFuzzEntry {
    struct Frames: Equatable {
        /// Offsets where a frame ended (taking frames one at a time: each one seen).
        var ends: [Int] = []
        var frames = 0
        var sawClose = false
        var atBoundary = true
        var broken = false
        var unmasked = false
        /// Bytes the tracker let through.
        var taken = 0
    }

    /// However the stream is cut, the tracker finds the frames RFC 6455 §5.2 reads in it
    /// (`reference`): the same ends, count and Close, the same refusal of a 64-bit length with
    /// its top bit set or of an unmasked frame where masking is required, and lets the same
    /// bytes through — except that the first byte of an unmasked frame goes through when it
    /// came alone at the end of a read (the tracker decides on the second byte).
    public static func webSocket(_ data: [UInt8], requireMask: Bool, stopAtFrameEnd: Bool) {
        let want = reference(data, requireMask: requireMask)
        for splits in [[]] + splitPlans(data) {
            var got = track(data, splits: splits, requireMask: requireMask, stopAtFrameEnd: stopAtFrameEnd)
            // A refused frame's header bytes that came in earlier reads went on (at most its
            // opcode and length bytes, before the length's first byte says it is broken).
            if got.unmasked && got.taken > want.taken && got.taken <= want.taken + 2 && splits.contains(got.taken) {
                got.taken = want.taken
            }
            if !stopAtFrameEnd { got.ends = want.ends }
            fuzzInvariant(got == want, "WebSocket: the frames differ from RFC 6455 §5.2's or with the cut")
        }
    }

    static func track(_ data: [UInt8], splits: [Int], requireMask: Bool, stopAtFrameEnd: Bool) -> Frames {
        var tracker = WebSocketFrameTracker(requireMask: requireMask)
        var out = Frames()
        var offset = 0
        reading: for chunk in HTTP1FuzzEntry.chunks(data, splits) {
            var rest = Array(chunk)
            while !rest.isEmpty {
                let taken = rest.withUnsafeBytes { tracker.scan($0, stopAtFrameEnd: stopAtFrameEnd) }
                fuzzInvariant(taken >= 0 && taken <= rest.count, "WebSocket: took more than it was given")
                offset += taken
                if taken > 0 && tracker.atBoundary && stopAtFrameEnd { out.ends.append(offset) }
                // A refused frame stops the tunnel: nothing after it is read.
                if tracker.sawRefusedFrame { break reading }
                fuzzInvariant(taken > 0, "WebSocket: took nothing from a stream it has not refused")
                if !stopAtFrameEnd { fuzzInvariant(taken == rest.count, "WebSocket: stopped without a reason") }
                rest.removeFirst(taken)
            }
        }
        out.frames = tracker.frames
        out.sawClose = tracker.sawClose
        out.atBoundary = tracker.atBoundary
        out.broken = tracker.isBroken
        out.unmasked = tracker.sawRefusedFrame
        out.taken = offset
        return out
    }

    /// RFC 6455 §5.2 read straight from the whole stream: each frame's header and length, and
    /// where the stream stops being followed.
    static func reference(_ s: [UInt8], requireMask: Bool) -> Frames {
        var out = Frames()
        var i = 0
        while i < s.count {
            out.atBoundary = false
            guard i + 1 < s.count else { break }
            let opcode = s[i] & 0x0F
            let masked = s[i + 1] & 0x80 != 0
            if requireMask && !masked {
                out.unmasked = true
                out.taken = i
                return out
            }
            let short = Int(s[i + 1] & 0x7F)
            let extended = short == 126 ? 2 : short == 127 ? 8 : 0
            if extended == 8 && i + 2 < s.count && s[i + 2] & 0x80 != 0 {
                // Where masking is required the broken length is refused like an unmasked frame.
                if requireMask {
                    out.unmasked = true
                    out.taken = i
                } else {
                    out.broken = true
                    out.taken = s.count
                }
                return out
            }
            guard i + 2 + extended <= s.count else { break }
            var length = UInt64(short)
            if extended > 0 { length = s[(i + 2)..<(i + 2 + extended)].reduce(0) { $0 << 8 | UInt64($1) } }
            let header = 2 + extended + (masked ? 4 : 0)
            guard s.count - i >= header, UInt64(s.count - i - header) >= length else { break }
            i += header + Int(length)
            out.ends.append(i)
            out.frames += 1
            if opcode == 0x8 { out.sawClose = true }
            out.atBoundary = true
        }
        out.taken = s.count
        return out
    }
}
