internal import COpenSSL

/// A WebSocket Close frame of the gateway's own (RFC 6455 §5.5.1): FIN, opcode 0x8, a
/// 2-byte status code and a short UTF-8 reason. Towards a client it is unmasked; towards a
/// server it is masked with a fresh random key, as every client-to-server frame must be
/// (RFC 6455 §5.3: "The masking key is a 32-bit value chosen at random … MUST be
/// unpredictable"), drawn from OpenSSL's RAND_bytes.
public enum WebSocketCloseFrame {
    /// 1001: the endpoint is going away (shutdown).
    public static let goingAway: UInt16 = 1001
    /// 1002: the peer broke the protocol (a client's unmasked frame).
    public static let protocolError: UInt16 = 1002
    /// 1008: a message violates the endpoint's policy (the session or token ended).
    public static let policyViolation: UInt16 = 1008

    /// The frame's bytes; `masked` for the server side. `reason` is one of the gateway's
    /// fixed phrases: at most 123 bytes, so that the payload fits a control frame (§5.5).
    public static func bytes(code: UInt16, reason: String, masked: Bool) -> [UInt8] {
        precondition(reason.utf8.count <= 123, "a close reason longer than a control frame holds")
        let payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
        var out: [UInt8] = [0x88, UInt8(payload.count) | (masked ? 0x80 : 0)]
        guard masked else { return out + payload }
        var key = [UInt8](repeating: 0, count: 4)
        precondition(RAND_bytes(&key, 4) == 1, "RAND_bytes failed")
        out += key
        for (i, b) in payload.enumerated() { out.append(b ^ key[i & 3]) }
        return out
    }
}
