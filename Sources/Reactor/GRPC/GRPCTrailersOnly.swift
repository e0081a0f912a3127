/// A refusal as gRPC answers one (PROTOCOL-HTTP2.md, "Trailers-Only"): HTTP status 200,
/// the call's `content-type`, `grpc-status` and `grpc-message` all in the response head,
/// and no body. On HTTP/2 that is one HEADERS frame with END_STREAM; gRPC-Web (PROTOCOL-
/// WEB.md) takes the same head over HTTP/1.1 too. The head's other fields
/// (`WWW-Authenticate`, `DPoP-Nonce`, `Retry-After`) go in the same block, so a client
/// reads them as metadata.
public enum GRPCTrailersOnly {
    /// The head's own fields, in order: `content-type`, `grpc-status`, then `grpc-message`
    /// when `message` is not empty.
    public static func fields(_ call: GRPCCall, refusal status: Int, message: String) -> [(String, String)] {
        fields(call, status: GRPCStatus(refusal: status), message: message)
    }

    /// The same, for a call the gateway serves itself and refuses with `status`.
    public static func fields(_ call: GRPCCall, status: GRPCStatus, message: String) -> [(String, String)] {
        var out = [
            ("content-type", call.responseContentType),
            ("grpc-status", String(status.rawValue))
        ]
        if !message.isEmpty { out.append(("grpc-message", percentEncoded(message))) }
        return out
    }

    /// PROTOCOL-HTTP2.md: "Percent-Encoded → 1*(Percent-Byte-Unencoded /
    /// Percent-Byte-Encoded)", where the unencoded bytes are 0x20–0x7E but `%`, and any
    /// other byte of the UTF-8 text is `%` and two uppercase hex digits. A message then
    /// never holds a byte a field value may not (RFC 9110 §5.5), whatever it quotes.
    public static func percentEncoded(_ message: String) -> String {
        var plain = true
        for b in message.utf8 where b < 0x20 || b > 0x7E || b == UInt8(ascii: "%") {
            plain = false
            break
        }
        if plain { return message }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(message.utf8.count + 16)
        for b in message.utf8 {
            if b >= 0x20 && b <= 0x7E && b != UInt8(ascii: "%") {
                out.append(b)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
