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
    static func parse<C: RandomAccessCollection<UInt8>>(_ bytes: C) throws(HTTP1ParseError) -> HTTP1Version
    where C.Index == Int {
        // Read in place: the version is parsed for every request and response.
        let s = bytes.startIndex
        guard bytes.count == 8, bytes[s] == 0x48, bytes[s + 1] == 0x54, bytes[s + 2] == 0x54,
            bytes[s + 3] == 0x50, bytes[s + 4] == 0x2F, HTTP1Bytes.isDigit(bytes[s + 5]), bytes[s + 6] == 0x2E,
            HTTP1Bytes.isDigit(bytes[s + 7])
        else {
            throw HTTP1ParseError(.invalidVersion)
        }
        guard bytes[s + 5] == 0x31 else { throw HTTP1ParseError(.unsupportedVersion) }
        switch bytes[s + 7] {
        case 0x30: return .http10
        case 0x31: return .http11
        default: throw HTTP1ParseError(.unsupportedVersion)
        }
    }
}
