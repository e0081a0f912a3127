/// The sizes an HTTP/1.1 parser accepts before it refuses a message. A value, so a listener
/// and an upstream pool can each carry their own; the defaults fit every client and server
/// the gateway is meant to front (nginx's defaults are 8 KiB lines and 32 KiB of fields).
///
/// Every limit is inclusive: a message exactly at a limit is accepted, one byte (or one
/// field, or one digit) past it is refused.
public struct HTTP1Limits: Sendable, Equatable {
    /// Bytes of the request line (or, for responses, the status line), CRLF not counted.
    /// RFC 9112 §3: "It is RECOMMENDED that all HTTP senders and recipients support, at a
    /// minimum, request-line lengths of 8000 octets." Refused with 414.
    public var maxRequestLineBytes: Int
    /// Field lines in one header section (and, separately, in one trailer section).
    /// Refused with 431 (RFC 6585 §5).
    public var maxHeaderCount: Int
    /// Bytes of the header section: every field line with its CRLF, neither the start line
    /// nor the empty line that ends the section. Refused with 431 (RFC 6585 §5).
    public var maxHeaderBytes: Int
    /// Hex digits of a chunk-size, leading zeros included (RFC 9112 §7.1: "Recipients MUST
    /// anticipate potentially large hexadecimal numerals and prevent parsing errors due to
    /// integer conversion overflows"). A size above `Int.max` is refused whatever its digits.
    public var maxChunkSizeDigits: Int
    /// Bytes of one chunk line after its size (the chunk-ext, RFC 9112 §7.1.1), CRLF not
    /// counted. Extensions are checked and dropped, never exposed.
    public var maxChunkExtensionBytes: Int
    /// Bytes of the trailer section, counted like `maxHeaderBytes` (RFC 9112 §7.1.2).
    public var maxTrailerBytes: Int

    public init(
        maxRequestLineBytes: Int = 8192, maxHeaderCount: Int = 100, maxHeaderBytes: Int = 32768,
        maxChunkSizeDigits: Int = 16, maxChunkExtensionBytes: Int = 4096, maxTrailerBytes: Int = 8192
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxHeaderBytes = maxHeaderBytes
        self.maxChunkSizeDigits = maxChunkSizeDigits
        self.maxChunkExtensionBytes = maxChunkExtensionBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}
