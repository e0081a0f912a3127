import Foundation

/// A gRPC request body's messages through `GRPCMessageCounter`, as the engines feed it.
extension StreamFuzzEntry {
    /// However the body is cut, the counter reads the messages the framing spells in the
    /// whole body (`reference`, an independent reading of PROTOCOL-HTTP2.md's
    /// Length-Prefixed-Message): the same count of whole prefixes and the same refusal, at the
    /// same message. The limit comes from the body's first byte (0 to 255), so refusals are
    /// common. In text form (gRPC-Web), a body that is plain base64 is read as the bytes it
    /// decodes to.
    public static func grpc(_ data: [UInt8], text: Bool) {
        guard let first = data.first else { return }
        let body = Array(data.dropFirst())
        let limit = GRPCMessageLimit(maxMessage: Int(first), text: text)
        let whole = count(body, splits: [], limit: limit)
        for splits in splitPlans(body) {
            let cut = count(body, splits: splits, limit: limit)
            fuzzInvariant(cut == whole, "gRPC: the messages differ with the cut")
        }
        if !text {
            fuzzInvariant(
                whole == reference(body, maxMessage: limit.maxMessage), "gRPC: messages differ from the framing")
        } else if let decoded = Data(base64Encoded: Data(body)) {
            let binary = count(Array(decoded), splits: [], limit: GRPCMessageLimit(maxMessage: limit.maxMessage))
            fuzzInvariant(whole == binary, "gRPC-Web text: messages differ from the bytes it decodes to")
        }
    }

    static func count(_ body: [UInt8], splits: [Int], limit: GRPCMessageLimit) -> (messages: Int, refused: Bool) {
        var counter = GRPCMessageCounter(limit)
        for chunk in HTTP1FuzzEntry.chunks(body, splits) where counter.feed(Array(chunk).span) == .tooLarge {
            return (counter.messages, true)
        }
        return (counter.messages, false)
    }

    /// Prefix after prefix in the whole body: flag, 4-byte big-endian length, that many bytes.
    static func reference(_ s: [UInt8], maxMessage: Int) -> (messages: Int, refused: Bool) {
        var i = 0
        var messages = 0
        while i + 5 <= s.count {
            let length = s[(i + 1)..<(i + 5)].reduce(0) { $0 << 8 | Int($1) }
            messages += 1
            if length > maxMessage { return (messages, true) }
            i += 5 + length
        }
        return (messages, false)
    }
}
