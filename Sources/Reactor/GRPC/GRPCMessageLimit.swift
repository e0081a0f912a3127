/// The bound on each request message of a gRPC call, in place of a bound on its whole body: a
/// client stream lasts as long as the call and is never held whole, so its total says nothing
/// of what one message costs its reader. gRPC's own servers bound each message alike
/// (`max_receive_message_length`, 4 MiB by default).
public struct GRPCMessageLimit: Sendable, Equatable {
    /// The most bytes a message may carry after its 5-byte prefix: its Message-Length as sent.
    /// A compressed message counts as it is on the wire, not as it would inflate.
    public var maxMessage: Int
    /// gRPC-Web's text form (`application/grpc-web-text`, PROTOCOL-WEB.md): the same framing,
    /// base64 on the wire.
    public var text: Bool

    public init(maxMessage: Int, text: Bool = false) {
        self.maxMessage = maxMessage
        self.text = text
    }

    /// The most body bytes one message may take on the wire, prefix included.
    public var wireBytes: Int {
        let framed = GRPCMessage.prefixBytes + maxMessage
        return text ? (framed + 2) / 3 * 4 : framed
    }
}

/// Reads a gRPC request body's Length-Prefixed-Message framing (PROTOCOL-HTTP2.md:
/// "Compressed-Flag Message-Length Message", a flag byte and a 4-byte big-endian length) as its
/// bytes stream through, in runs of any size: a prefix may be split across DATA frames or
/// chunks, and one run may end a message and start the next. A message that announces more
/// than the limit is refused as soon as its prefix is whole, before its bytes are read. The
/// flag is not judged here (the upstream says whether it takes compressed messages), nor a
/// body that ends inside a message. Pure: no I/O, no clock.
public struct GRPCMessageCounter: Sendable {
    public enum Verdict: Equatable, Sendable {
        case within
        /// A message announced more than `limit.maxMessage` bytes. Final: every later run
        /// gets it too.
        case tooLarge
    }

    public let limit: GRPCMessageLimit
    /// Bytes of the current message still to come (0: a prefix is next, or under way).
    private var remaining = 0
    /// Prefix bytes read of the next message (0...4), and the length read so far.
    private var prefixRead = 0
    private var length = 0
    /// gRPC-Web text: the base64 quantum under way, its sextets and how many.
    private var quantum: UInt32 = 0
    private var sextets = 0
    private var refused = false
    /// Messages whose prefix was read whole.
    public private(set) var messages = 0

    public init(_ limit: GRPCMessageLimit) { self.limit = limit }

    /// Reads the next run of the body's bytes (as they are on the wire).
    public mutating func feed(_ bytes: Span<UInt8>) -> Verdict {
        guard !refused else { return .tooLarge }
        var i = 0
        if limit.text {
            while i < bytes.count {
                textByte(bytes[i])
                if refused { return .tooLarge }
                i += 1
            }
            return .within
        }
        while i < bytes.count {
            if remaining > 0 {
                // The message's own bytes are not looked at: a run skips them whole.
                let n = min(remaining, bytes.count - i)
                remaining -= n
                i += n
            } else {
                prefixByte(bytes[i])
                if refused { return .tooLarge }
                i += 1
            }
        }
        return .within
    }

    /// A byte of the framing, decoded. (Once refused, what follows changes nothing: the
    /// verdict stays.)
    private mutating func decoded(_ byte: UInt8) {
        if remaining > 0 { remaining -= 1 } else { prefixByte(byte) }
    }

    /// The next byte of a prefix: the flag, then the length's four.
    private mutating func prefixByte(_ byte: UInt8) {
        if prefixRead > 0 { length = length << 8 | Int(byte) }
        prefixRead += 1
        guard prefixRead == GRPCMessage.prefixBytes else { return }
        messages += 1
        if length > limit.maxMessage { refused = true }
        remaining = length
        length = 0
        prefixRead = 0
    }

    /// gRPC-Web text (PROTOCOL-WEB.md): base64 (RFC 4648 §4), which a sender may end with
    /// padding and start again (each message's frame encoded on its own). `=` ends a
    /// quantum early: 2 sextets are 1 byte, 3 are 2. A byte outside the alphabet (a line
    /// break) carries nothing and is passed over; whether the body is good base64 is the
    /// upstream's to judge.
    private mutating func textByte(_ c: UInt8) {
        let v: UInt8
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): v = 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): v = 63
        case UInt8(ascii: "="):
            switch sextets {
            case 2:
                decoded(UInt8(truncatingIfNeeded: quantum >> 4))
            case 3:
                decoded(UInt8(truncatingIfNeeded: quantum >> 10))
                decoded(UInt8(truncatingIfNeeded: quantum >> 2))
            default: break
            }
            quantum = 0
            sextets = 0
            return
        default: return
        }
        quantum = quantum << 6 | UInt32(v)
        sextets += 1
        guard sextets == 4 else { return }
        decoded(UInt8(truncatingIfNeeded: quantum >> 16))
        decoded(UInt8(truncatingIfNeeded: quantum >> 8))
        decoded(UInt8(truncatingIfNeeded: quantum))
        quantum = 0
        sextets = 0
    }
}
