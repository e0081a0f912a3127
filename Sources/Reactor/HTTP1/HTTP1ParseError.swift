/// Why an HTTP/1.1 parser refused its input. After any of these the byte stream cannot be
/// resynchronised (RFC 9112 §11.2: framing that is in doubt is how requests are smuggled),
/// so the caller answers `status` if it still can and closes the connection.
///
/// A struct with a stable `code` (for logs and metrics) rather than an enum, so that codes
/// can be added without breaking callers. `status` is the answer owed to a *client* whose
/// request was refused; when an upstream *response* is refused the gateway answers 502
/// whatever the code.
public struct HTTP1ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: Code

    /// The HTTP status to answer a client with.
    public var status: Int { code.status }

    public init(_ code: Code) { self.code = code }

    public var description: String { "HTTP/1.1 parse error \(code.rawValue) (\(code.status))" }

    /// A stable, snake_case name for one reason to refuse, and the status it maps to.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public let status: Int

        init(_ rawValue: String, _ status: Int) {
            self.rawValue = rawValue
            self.status = status
        }

        public var description: String { rawValue }
        public static func == (a: Code, b: Code) -> Bool { a.rawValue == b.rawValue }
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

        // Bytes anywhere in a head, a chunk line or a trailer section (RFC 9112 §2.2).
        /// LF not preceded by CR. RFC 9112 §2.2 lets a recipient accept a bare LF; we do not,
        /// so that every hop agrees on where a line ends.
        public static let bareLF = Code("bare_lf", 400)
        /// CR not followed by LF (RFC 9112 §2.2: "MUST consider the message element invalid").
        public static let bareCR = Code("bare_cr", 400)
        /// A NUL byte (RFC 9110 §5.5: "MUST either reject the message … or replace").
        public static let nul = Code("nul", 400)

        // Request line (RFC 9112 §3).
        public static let invalidRequestLine = Code("invalid_request_line", 400)
        public static let invalidMethod = Code("invalid_method", 400)
        public static let invalidTarget = Code("invalid_target", 400)
        /// A request line with no version: HTTP/0.9, which this gateway does not speak.
        public static let http09 = Code("http_0_9", 400)
        /// Version text that is not `HTTP/` DIGIT `.` DIGIT (RFC 9112 §2.3).
        public static let invalidVersion = Code("invalid_version", 400)
        /// A well-formed version other than HTTP/1.0 and HTTP/1.1 (RFC 9110 §15.6.6).
        public static let unsupportedVersion = Code("unsupported_version", 505)
        /// The HTTP/2 connection preface (RFC 9113 §3.4) on an HTTP/1.1 port: prior-knowledge
        /// h2 is not offered here. 505, and distinct so that logs show what the client was.
        public static let http2Preface = Code("http2_preface", 505)
        /// RFC 9112 §3: "A server that receives a request-target longer than any URI it wishes
        /// to parse MUST respond with a 414".
        public static let requestLineTooLong = Code("request_line_too_long", 414)
        /// More than one empty line before a request line (RFC 9112 §2.2 asks to ignore "at
        /// least one"; we ignore exactly one).
        public static let leadingEmptyLines = Code("leading_empty_lines", 400)

        // Field lines (RFC 9112 §5, RFC 9110 §5.5).
        /// A line starting with SP or HTAB: obs-fold (RFC 9112 §5.2), or whitespace between the
        /// start line and the first field (RFC 9112 §2.2).
        public static let obsFold = Code("obs_fold", 400)
        public static let missingColon = Code("missing_colon", 400)
        public static let emptyFieldName = Code("empty_field_name", 400)
        /// RFC 9112 §5.1: "A server MUST reject, with a response status code of 400 …, any
        /// received request message that contains whitespace between a header field name and
        /// colon."
        public static let whitespaceBeforeColon = Code("whitespace_before_colon", 400)
        public static let invalidFieldName = Code("invalid_field_name", 400)
        public static let invalidFieldValue = Code("invalid_field_value", 400)
        public static let tooManyHeaders = Code("too_many_headers", 431)
        public static let headerSectionTooLarge = Code("header_section_too_large", 431)

        // Head semantics.
        public static let missingHost = Code("missing_host", 400)
        public static let multipleHost = Code("multiple_host", 400)
        public static let contentLengthWithTransferEncoding = Code("content_length_with_transfer_encoding", 400)
        public static let transferEncodingOnHTTP10 = Code("transfer_encoding_on_http_1_0", 400)
        /// A well-formed Transfer-Encoding list other than exactly `chunked` (RFC 9112 §6.1).
        public static let unsupportedTransferCoding = Code("unsupported_transfer_coding", 501)
        /// A Transfer-Encoding value that is not a list of tokens (quotes, empty elements…).
        public static let invalidTransferEncoding = Code("invalid_transfer_encoding", 400)
        public static let invalidContentLength = Code("invalid_content_length", 400)
        public static let multipleContentLength = Code("multiple_content_length", 400)
        /// An Expect other than 100-continue (RFC 9110 §10.1.1).
        public static let unsupportedExpectation = Code("unsupported_expectation", 417)

        // Chunked coding (RFC 9112 §7.1).
        public static let invalidChunkSize = Code("invalid_chunk_size", 400)
        public static let chunkSizeTooLarge = Code("chunk_size_too_large", 400)
        public static let invalidChunkExtension = Code("invalid_chunk_extension", 400)
        public static let chunkExtensionTooLarge = Code("chunk_extension_too_large", 400)
        /// Chunk data not followed by CRLF.
        public static let invalidChunkTerminator = Code("invalid_chunk_terminator", 400)
        public static let trailerSectionTooLarge = Code("trailer_section_too_large", 400)
        /// A framing or routing field in a trailer section (RFC 9110 §6.5.1): Content-Length,
        /// Transfer-Encoding, Host.
        public static let forbiddenTrailerField = Code("forbidden_trailer_field", 400)

        // Responses.
        public static let invalidStatusLine = Code("invalid_status_line", 502)
        /// A status code outside 100…599 (RFC 9110 §15).
        public static let invalidStatus = Code("invalid_status", 502)
        public static let statusLineTooLong = Code("status_line_too_long", 502)
        /// Bytes from the upstream while no response is expected on the connection.
        public static let unsolicitedResponse = Code("unsolicited_response", 502)
        /// End of stream in the middle of a message that is not close-delimited.
        public static let truncatedMessage = Code("truncated_message", 502)
    }
}
