/// How a message's body is delimited (RFC 9112 §6.3), derived once from its head.
public enum HTTP1Framing: Sendable, Equatable {
    /// No body: a request with neither Content-Length nor Transfer-Encoding; a response to
    /// HEAD, a 1xx, 204 or 304 (RFC 9112 §6.3 rules 1–2).
    case none
    /// Exactly this many bytes (RFC 9112 §6.3 rules 5–6).
    case contentLength(UInt64)
    /// The chunked transfer coding, the only one accepted (RFC 9112 §7.1).
    case chunked
    /// Responses only: the body runs until the connection closes (RFC 9112 §6.3 rule 8);
    /// the caller calls `finish()` at end of stream.
    case untilClose
}

/// The protocol versions this parser speaks (RFC 9112 §2.3).
public enum HTTP1Version: Sendable, Equatable, CustomStringConvertible {
    case http10
    case http11

    public var description: String { self == .http10 ? "HTTP/1.0" : "HTTP/1.1" }

    /// HTTP-version = "HTTP" "/" DIGIT "." DIGIT (RFC 9112 §2.3), case-sensitive.
    /// Throws `invalidVersion` for other text, `unsupportedVersion` for e.g. HTTP/2.0.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTP1ParseError) -> HTTP1Version {
        let b = Array(bytes.prefix(9))
        guard bytes.count == 8, b[0] == 0x48, b[1] == 0x54, b[2] == 0x54, b[3] == 0x50, b[4] == 0x2F,
            HTTP1Bytes.isDigit(b[5]), b[6] == 0x2E, HTTP1Bytes.isDigit(b[7])
        else {
            throw HTTP1ParseError(.invalidVersion)
        }
        guard b[5] == 0x31 else { throw HTTP1ParseError(.unsupportedVersion) }
        switch b[7] {
        case 0x30: return .http10
        case 0x31: return .http11
        default: throw HTTP1ParseError(.unsupportedVersion)
        }
    }
}
