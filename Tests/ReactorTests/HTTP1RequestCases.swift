import Reactor
import Testing

/// One request input and what the parser must make of it, named for the test report.
struct HTTP1Case: Sendable, CustomTestStringConvertible {
    let name: String
    let wire: [UInt8]
    /// nil: accepted.
    let code: HTTP1ParseError.Code?

    var testDescription: String { name }

    init(_ name: String, _ wire: String, _ code: HTTP1ParseError.Code? = nil) {
        self.init(name, Array(wire.utf8), code)
    }

    init(_ name: String, _ wire: [UInt8], _ code: HTTP1ParseError.Code? = nil) {
        self.name = name
        self.wire = wire
        self.code = code
    }
}

/// The request catalogue: every refusal the parser owes (RFC 9112, the smuggling
/// list) and the acceptances next to them. Shared by the refusal test, the acceptance test
/// and the chunking-invariance property.
enum HTTP1RequestCases {
    static let get = "GET / HTTP/1.1\r\nHost: a\r\n"
    static let post = "POST / HTTP/1.1\r\nHost: a\r\n"

    static func bytes(_ parts: Any...) -> [UInt8] {
        parts.flatMap { part -> [UInt8] in
            if let s = part as? String { return Array(s.utf8) }
            if let b = part as? [UInt8] { return b }
            if let b = part as? UInt8 { return [b] }
            preconditionFailure("bytes: \(part)")
        }
    }

    static let refusals: [HTTP1Case] = [
        // Framing: CL.TE, TE.CL, TE.TE.
        HTTP1Case(
            "CL then TE", post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            .contentLengthWithTransferEncoding),
        HTTP1Case(
            "TE then CL", post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
            .contentLengthWithTransferEncoding),
        HTTP1Case(
            "TE chunked, identity", post + "Transfer-Encoding: chunked, identity\r\n\r\n", .unsupportedTransferCoding),
        HTTP1Case("TE identity", post + "Transfer-Encoding: identity\r\n\r\n", .unsupportedTransferCoding),
        HTTP1Case("TE xchunked", post + "Transfer-Encoding: xchunked\r\n\r\n", .unsupportedTransferCoding),
        HTTP1Case("TE gzip, chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferCoding),
        HTTP1Case(
            "TE chunked twice in one field", post + "Transfer-Encoding: chunked, chunked\r\n\r\n",
            .unsupportedTransferCoding),
        HTTP1Case(
            "TE chunked in two fields", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            .unsupportedTransferCoding),
        HTTP1Case("TE quoted chunked", post + "Transfer-Encoding: \"chunked\"\r\n\r\n", .invalidTransferEncoding),
        HTTP1Case(
            "TE chunked with parameter", post + "Transfer-Encoding: chunked;q=1\r\n\r\n", .invalidTransferEncoding),
        HTTP1Case("TE leading comma", post + "Transfer-Encoding: ,chunked\r\n\r\n", .invalidTransferEncoding),
        HTTP1Case("TE trailing comma", post + "Transfer-Encoding: chunked,\r\n\r\n", .invalidTransferEncoding),
        HTTP1Case("TE empty", post + "Transfer-Encoding:\r\n\r\n", .invalidTransferEncoding),
        HTTP1Case(
            "TE trailing junk after space", post + "Transfer-Encoding: chunked x\r\n\r\n", .invalidTransferEncoding),
        HTTP1Case("TE chunked VT", post + "Transfer-Encoding: chunked\u{0B}\r\n\r\n", .invalidFieldValue),
        HTTP1Case("TE chunked FF", post + "Transfer-Encoding: \u{0C}chunked\r\n\r\n", .invalidFieldValue),
        HTTP1Case("TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .transferEncodingOnHTTP10),
        HTTP1Case("TE space before colon", post + "Transfer-Encoding : chunked\r\n\r\n", .whitespaceBeforeColon),
        // Content-Length.
        HTTP1Case("CL negative", post + "Content-Length: -1\r\n\r\n", .invalidContentLength),
        HTTP1Case("CL plus sign", post + "Content-Length: +5\r\n\r\n", .invalidContentLength),
        HTTP1Case("CL space inside", post + "Content-Length: 1 0\r\n\r\n", .invalidContentLength),
        HTTP1Case("CL empty", post + "Content-Length:\r\n\r\n", .invalidContentLength),
        HTTP1Case("CL hex", post + "Content-Length: 0x5\r\n\r\n", .invalidContentLength),
        HTTP1Case("CL letters", post + "Content-Length: five\r\n\r\n", .invalidContentLength),
        HTTP1Case("CL list of equal values", post + "Content-Length: 5, 5\r\n\r\nhello", .invalidContentLength),
        HTTP1Case("CL overflow", post + "Content-Length: 18446744073709551616\r\n\r\n", .invalidContentLength),
        HTTP1Case(
            "CL repeated equal", post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", .multipleContentLength),
        HTTP1Case(
            "CL repeated differing", post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            .multipleContentLength),
        // Line endings and bytes in the head.
        HTTP1Case("obs-fold", get + "X-A: a\r\n b\r\n\r\n", .obsFold),
        HTTP1Case("obs-fold with tab", get + "X-A: a\r\n\tb\r\n\r\n", .obsFold),
        HTTP1Case("whitespace before first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", .obsFold),
        HTTP1Case("NUL in value", get + "X-A: a\0b\r\n\r\n", .nul),
        HTTP1Case("NUL in name", get + "X\0A: b\r\n\r\n", .nul),
        HTTP1Case("NUL in target", "GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n", .nul),
        HTTP1Case("bare CR in value", get + "X-A: a\rb\r\n\r\n", .bareCR),
        HTTP1Case("CR CR LF", get + "X-A: a\r\r\n\r\n", .bareCR),
        HTTP1Case("bare CR ending the head", get + "\r\r", .bareCR),
        HTTP1Case("bare LF after request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", .bareLF),
        HTTP1Case("bare LF after field", get + "X-A: a\n\r\n", .bareLF),
        HTTP1Case("bare LF ending the head", get + "\n", .bareLF),
        HTTP1Case("LF only request", "GET / HTTP/1.1\nHost: a\n\n", .bareLF),
        // A CR not followed by LF, in each state that waits for the LF: a chunk that ends on
        // the CR must not change the verdict (see the split-anywhere property).
        HTTP1Case("CR before the request line", "\r" + get + "\r\n", .bareCR),
        HTTP1Case("CR after the leading empty line", "\r\n\r" + get + "\r\n", .bareCR),
        HTTP1Case("CR ending the request line", "GET / HTTP/1.1\rHost: a\r\n\r\n", .bareCR),
        HTTP1Case("CR starting a field line", "GET / HTTP/1.1\r\n\rHost: a\r\n\r\n", .bareCR),
        HTTP1Case("CR ending a field line", get + "X-A: a\rX-B: b\r\n\r\n", .bareCR),
        // Field names and values.
        HTTP1Case("space before colon", get + "X-A : b\r\n\r\n", .whitespaceBeforeColon),
        HTTP1Case("tab before colon", get + "X-A\t: b\r\n\r\n", .whitespaceBeforeColon),
        HTTP1Case("empty field name", get + ": b\r\n\r\n", .emptyFieldName),
        HTTP1Case("missing colon", get + "X-A b\r\n\r\n", .missingColon),
        HTTP1Case("space inside name", get + "X A: b\r\n\r\n", .invalidFieldName),
        HTTP1Case("paren in name", get + "X(A): b\r\n\r\n", .invalidFieldName),
        HTTP1Case("slash in name", get + "X/A: b\r\n\r\n", .invalidFieldName),
        HTTP1Case("non-ASCII name", bytes(get, "X", UInt8(0xC3), UInt8(0xA9), ": b\r\n\r\n"), .invalidFieldName),
        HTTP1Case("DEL in value", get + "X-A: a\u{7F}\r\n\r\n", .invalidFieldValue),
        HTTP1Case("SOH in value", get + "X-A: a\u{01}b\r\n\r\n", .invalidFieldValue),
        HTTP1Case("ESC in value", get + "X-A: \u{1B}[0m\r\n\r\n", .invalidFieldValue),
        // Request line.
        HTTP1Case("invalid method char", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
        HTTP1Case("leading space", " GET / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod),
        HTTP1Case("no space at all", "GET\r\nHost: a\r\n\r\n", .invalidRequestLine),
        HTTP1Case("HTTP/0.9", "GET /\r\n", .http09),
        HTTP1Case("double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("space in target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("tab in target", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("DEL in target", "GET /\u{7F} HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("control in target", "GET /\u{01} HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("non-ASCII target", bytes("GET /", UInt8(0xE9), " HTTP/1.1\r\nHost: a\r\n\r\n"), .invalidTarget),
        HTTP1Case("relative target", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("asterisk with GET", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("authority-form outside CONNECT", "GET example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("absolute-form without //", "GET http:/x HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("absolute-form bad host byte", "GET http://a{b}/ HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("CONNECT origin-form", "CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("CONNECT without port", "CONNECT a.example HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget),
        HTTP1Case("HTTP/1.7", "GET / HTTP/1.7\r\nHost: a\r\n\r\n", .unsupportedVersion),
        HTTP1Case("HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", .unsupportedVersion),
        HTTP1Case("HTTP/0.9 version", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", .unsupportedVersion),
        HTTP1Case("HTTP/1.10", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", .invalidVersion),
        HTTP1Case("lowercase http", "GET / http/1.1\r\nHost: a\r\n\r\n", .invalidVersion),
        HTTP1Case("HTTP/1", "GET / HTTP/1\r\nHost: a\r\n\r\n", .invalidVersion),
        HTTP1Case("trailing space after version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", .invalidVersion),
        HTTP1Case("h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .http2Preface),
        HTTP1Case("two empty lines first", "\r\n\r\n" + get + "\r\n", .leadingEmptyLines),
        // Host, Expect.
        HTTP1Case("no Host on 1.1", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n", .missingHost),
        HTTP1Case("two Hosts", get + "Host: b\r\n\r\n", .multipleHost),
        HTTP1Case("two Hosts on 1.0", "GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n", .multipleHost),
        HTTP1Case("Expect other", post + "Expect: 200-ok\r\nContent-Length: 0\r\n\r\n", .unsupportedExpectation),
        // Chunked bodies.
        HTTP1Case("non-hex chunk size", post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunkSize),
        HTTP1Case("empty chunk size", post + "Transfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunkSize),
        HTTP1Case(
            "negative chunk size", post + "Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
            .invalidChunkSize),
        HTTP1Case(
            "junk after chunk size", post + "Transfer-Encoding: chunked\r\n\r\n5g\r\nhello\r\n0\r\n\r\n",
            .invalidChunkSize),
        HTTP1Case(
            "space after chunk size", post + "Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
            .invalidChunkSize),
        HTTP1Case(
            "0x chunk size", post + "Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
        HTTP1Case(
            "17 hex digits", post + "Transfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n",
            .chunkSizeTooLarge),
        HTTP1Case(
            "chunk size past Int.max", post + "Transfer-Encoding: chunked\r\n\r\n8000000000000000\r\n",
            .chunkSizeTooLarge),
        HTTP1Case(
            "chunk size ffff…", post + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", .chunkSizeTooLarge),
        HTTP1Case(
            "empty extension", post + "Transfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n",
            .invalidChunkExtension),
        HTTP1Case(
            "extension bad name", post + "Transfer-Encoding: chunked\r\n\r\n5;a(b)\r\nhello\r\n0\r\n\r\n",
            .invalidChunkExtension),
        HTTP1Case(
            "extension unterminated quote", post + "Transfer-Encoding: chunked\r\n\r\n5;a=\"b\r\nhello\r\n0\r\n\r\n",
            .invalidChunkExtension),
        HTTP1Case(
            "extension empty value", post + "Transfer-Encoding: chunked\r\n\r\n5;a=\r\nhello\r\n0\r\n\r\n",
            .invalidChunkExtension),
        HTTP1Case(
            "extension two names", post + "Transfer-Encoding: chunked\r\n\r\n5;a b\r\nhello\r\n0\r\n\r\n",
            .invalidChunkExtension),
        HTTP1Case(
            "extension control byte", post + "Transfer-Encoding: chunked\r\n\r\n5;a=\u{01}\r\nhello\r\n0\r\n\r\n",
            .invalidChunkExtension),
        HTTP1Case(
            "bare LF after chunk size", post + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", .bareLF),
        HTTP1Case(
            "data longer than size", post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello!\r\n0\r\n\r\n",
            .invalidChunkTerminator),
        HTTP1Case(
            "data without CRLF", post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello0\r\n\r\n", .invalidChunkTerminator
        ),
        HTTP1Case("data ends with LF", post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n", .bareLF),
        HTTP1Case("NUL in chunk line", post + "Transfer-Encoding: chunked\r\n\r\n5\0\r\nhello\r\n0\r\n\r\n", .nul),
        HTTP1Case("CR ending a chunk size", post + "Transfer-Encoding: chunked\r\n\r\n5\rhello\r\n0\r\n\r\n", .bareCR),
        HTTP1Case(
            "CR ending a chunk extension", post + "Transfer-Encoding: chunked\r\n\r\n5;a=b\rhello\r\n0\r\n\r\n",
            .bareCR),
        HTTP1Case("CR after chunk data", post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r0\r\n\r\n", .bareCR),
        HTTP1Case("CR ending the last chunk", post + "Transfer-Encoding: chunked\r\n\r\n0\r\r\n", .bareCR),
        // Trailers.
        HTTP1Case("trailer obs-fold", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\r\n b\r\n\r\n", .obsFold),
        HTTP1Case(
            "trailer bad name", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX T: a\r\n\r\n", .invalidFieldName),
        HTTP1Case("trailer missing colon", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T\r\n\r\n", .missingColon),
        HTTP1Case("trailer bare LF", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\n\r\n", .bareLF),
        HTTP1Case("trailer bare CR", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\rb\r\n\r\n", .bareCR),
        HTTP1Case(
            "CR ending the trailer section", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\r\n\rX\r\n",
            .bareCR),
        HTTP1Case(
            "trailer Content-Length", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n",
            .forbiddenTrailerField),
        HTTP1Case(
            "trailer Transfer-Encoding",
            post + "Transfer-Encoding: chunked\r\n\r\n0\r\ntransfer-encoding: chunked\r\n\r\n", .forbiddenTrailerField),
        HTTP1Case(
            "trailer Host", post + "Transfer-Encoding: chunked\r\n\r\n0\r\nHOST: b\r\n\r\n", .forbiddenTrailerField)
    ]

    static let acceptances: [HTTP1Case] = [
        HTTP1Case("simple GET", get + "\r\n"),
        HTTP1Case("fields case-preserved, OWS trimmed", get + "X-Mixed-Case:  \t v a l \t \r\nx-empty:\r\n\r\n"),
        HTTP1Case(
            "obs-text in a value", bytes(get, "X-A: caf", UInt8(0xC3), UInt8(0xA9), " ", UInt8(0xFF), "\r\n\r\n")),
        HTTP1Case("one leading CRLF", "\r\n" + get + "\r\n"),
        HTTP1Case("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n"),
        HTTP1Case("Content-Length body", post + "Content-Length: 5\r\n\r\nhello"),
        HTTP1Case("Content-Length 0", post + "Content-Length: 0\r\n\r\n"),
        HTTP1Case("Content-Length leading zeros", post + "content-length: 005\r\n\r\nhello"),
        HTTP1Case("chunked", post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
        HTTP1Case("chunked, case and OWS", post + "transfer-encoding: \t CHUNKED \r\n\r\nA\r\n0123456789\r\n0\r\n\r\n"),
        HTTP1Case(
            "chunk extensions",
            post
                + "Transfer-Encoding: chunked\r\n\r\n5;a=b;c\r\nhello\r\n1 ; q = \"x \\\"y\\\"\"\r\n!\r\n0;last\r\n\r\n"
        ),
        HTTP1Case(
            "trailers",
            post + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: 1234\r\nx-other:  v \r\n\r\n"),
        HTTP1Case("Expect 100-continue", post + "Expect: 100-Continue\r\nContent-Length: 2\r\n\r\nok"),
        HTTP1Case("absolute-form", "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n"),
        HTTP1Case("asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
        HTTP1Case("authority-form", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
        HTTP1Case("upgrade", get + "Connection: keep-alive, Upgrade\r\nUpgrade: websocket, h2c\r\n\r\n"),
        HTTP1Case("extension method", "PURGE /x HTTP/1.1\r\nHost: a\r\n\r\n"),
        HTTP1Case(
            "target with every visible byte",
            "GET /!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~ HTTP/1.1\r\nHost: a\r\n\r\n")
    ]
}
