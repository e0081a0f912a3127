import Reactor
import Testing

/// The upstream response parser without sockets: framing per RFC 9112 §6.3 (HEAD, 1xx, 204,
/// 304, chunked, Content-Length, close-delimited), interim responses, 101, and the same
/// strictness on the head as requests.
@Suite("HTTP/1.1 response parser")
struct HTTP1ResponseParserTests {
    static let refusals: [HTTP1Case] = [
        HTTP1Case("status code two digits", "HTTP/1.1 20 OK\r\n\r\n", .invalidStatusLine),
        HTTP1Case("status code four digits", "HTTP/1.1 2000 OK\r\n\r\n", .invalidStatusLine),
        HTTP1Case("no SP before reason", "HTTP/1.1 200OK\r\n\r\n", .invalidStatusLine),
        HTTP1Case("two SPs before code", "HTTP/1.1  200 OK\r\n\r\n", .invalidStatusLine),
        HTTP1Case("no status code", "HTTP/1.1\r\n\r\n", .invalidStatusLine),
        HTTP1Case("control in reason", "HTTP/1.1 200 O\u{01}K\r\n\r\n", .invalidStatusLine),
        HTTP1Case("leading empty line", "\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", .invalidStatusLine),
        HTTP1Case("status 099", "HTTP/1.1 099 X\r\n\r\n", .invalidStatus),
        HTTP1Case("status 600", "HTTP/1.1 600 X\r\n\r\n", .invalidStatus),
        HTTP1Case("HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
        HTTP1Case("HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", .unsupportedVersion),
        HTTP1Case("version junk", "HTTP/1.1x 200 OK\r\n\r\n", .invalidVersion),
        HTTP1Case("ICY", "ICY 200 OK\r\n\r\n", .invalidVersion),
        HTTP1Case("bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", .bareLF),
        HTTP1Case("bare CR", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", .bareCR),
        // A CR not followed by LF, in each state that waits for the LF (see the request
        // catalogue).
        HTTP1Case("CR before the status line", "\rHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", .bareCR),
        HTTP1Case(
            "CR after an interim response",
            "HTTP/1.1 100 Continue\r\n\r\n\rHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", .bareCR),
        HTTP1Case("CR ending the status line", "HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", .bareCR),
        HTTP1Case("CR starting a field line", "HTTP/1.1 200 OK\r\n\rContent-Length: 0\r\n\r\n", .bareCR),
        HTTP1Case(
            "CR ending a chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\rabc\r\n0\r\n\r\n",
            .bareCR),
        HTTP1Case(
            "CR ending a chunk extension",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\rabc\r\n0\r\n\r\n", .bareCR),
        HTTP1Case(
            "CR after chunk data", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r0\r\n\r\n",
            .bareCR),
        HTTP1Case(
            "CR ending the trailer section",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n\rX\r\n", .bareCR),
        HTTP1Case("NUL", "HTTP/1.1 200 OK\r\nX: a\0\r\n\r\n", .nul),
        HTTP1Case("obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", .obsFold),
        HTTP1Case("space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", .whitespaceBeforeColon),
        HTTP1Case(
            "CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            .contentLengthWithTransferEncoding),
        HTTP1Case("TE on HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .transferEncodingOnHTTP10),
        HTTP1Case("TE xchunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n", .unsupportedTransferCoding),
        HTTP1Case(
            "TE gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            .unsupportedTransferCoding),
        HTTP1Case(
            "CL differing", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", .multipleContentLength),
        HTTP1Case("CL signed", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n", .invalidContentLength),
        HTTP1Case("bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n", .invalidChunkSize),
        HTTP1Case(
            "chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n",
            .invalidChunkTerminator),
        HTTP1Case(
            "forbidden trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 1\r\n\r\n",
            .forbiddenTrailerField),
        HTTP1Case("truncated CL body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", .truncatedMessage),
        HTTP1Case("truncated head", "HTTP/1.1 200 OK\r\nContent-Le", .truncatedMessage),
        HTTP1Case(
            "truncated chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", .truncatedMessage),
        HTTP1Case(
            "bytes after the response", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200 OK\r\n\r\n",
            .unsolicitedResponse)
    ]

    static let acceptances: [HTTP1Case] = [
        HTTP1Case("200 with CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
        HTTP1Case("empty reason with SP", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"),
        HTTP1Case("empty reason without SP", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"),
        HTTP1Case(
            "obs-text reason",
            HTTP1RequestCases.bytes("HTTP/1.1 200 ", UInt8(0xC9), "t\u{09}\r\nContent-Length: 0\r\n\r\n")),
        HTTP1Case(
            "chunked with trailers",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"),
        HTTP1Case("close-delimited", "HTTP/1.1 200 OK\r\n\r\nall until close"),
        HTTP1Case("close-delimited 1.0", "HTTP/1.0 200 OK\r\n\r\nold"),
        HTTP1Case("204", "HTTP/1.1 204 No Content\r\n\r\n"),
        HTTP1Case("304 with CL", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n"),
        HTTP1Case("100 then 200", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        HTTP1Case(
            "103 then 200",
            "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        )
    ]

    @Test(arguments: refusals)
    func refuses(_ c: HTTP1Case) {
        let outcome = parseResponses(c.wire)
        #expect(outcome.error == c.code, "\(outcome)")
    }

    @Test(arguments: acceptances)
    func accepts(_ c: HTTP1Case) {
        let outcome = parseResponses(c.wire)
        #expect(outcome.error == nil && outcome.messages.count == 1, "\(outcome)")
    }

    @Test(arguments: refusals + acceptances)
    func chunkingDoesNotMatter(_ c: HTTP1Case) {
        let whole = parseResponses(c.wire)
        for size in [1, 2, 5, 64] {
            #expect(parseResponses(c.wire, chunk: size) == whole, "chunk size \(size)")
        }
    }

    /// One byte at a time, or cut in two anywhere, every case gets the same verdict as when
    /// it arrives whole: the same responses and the same refusal, with the same code.
    @Test(arguments: refusals + acceptances)
    func splittingAnywhereDoesNotMatter(_ c: HTTP1Case) {
        let whole = parseResponses(c.wire)
        #expect(whole.error == c.code, "\(whole)")
        for cuts in everyFeeding(c.wire.count) {
            let outcome = parseResponses(c.wire, cuts: cuts)
            #expect(outcome == whole && outcome.error == c.code, "cut at \(cuts): \(outcome)")
        }
    }

    /// The verdict on a CR does not wait for the chunk that holds the byte after it: a CR
    /// alone in its read, then a response, is refused as the two together are.
    @Test func loneCRInItsOwnReadIsRefused() throws {
        for prefix in ["", "HTTP/1.1 100 Continue\r\n\r\n"] {
            var parser = HTTP1ResponseParser()
            parser.expectResponse(toHEAD: false)
            if !prefix.isEmpty {
                guard case .informational? = try parser.parse(Array(prefix.utf8)).event else {
                    Issue.record("expected the 100")
                    return
                }
            }
            #expect(try parser.parse(Array("\r".utf8)) == (1, nil))
            #expect(throws: HTTP1ParseError(.bareCR)) {
                try parser.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8))
            }
        }
    }

    @Test func headValuesAndFraming() throws {
        let ok = try #require(
            parseResponses(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b \r\n\r\nhello".utf8)).only)
        let head = try #require(ok.head)
        #expect(head.status == 200 && head.reason == "OK" && head.version == .http11)
        #expect(head.framing == .contentLength(5) && head.keepAlive)
        #expect(head.fields == HTTP1Fields([("Content-Length", "5"), ("X-A", "b")]))
        #expect(ok.body == Array("hello".utf8))

        let chunked = try #require(
            parseResponses(
                Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n".utf8)
            ).only)
        #expect(chunked.head?.framing == .chunked && chunked.body == Array("abc".utf8))
        #expect(chunked.trailers == HTTP1Fields([("X-T", "1")]))

        let close = try #require(parseResponses(Array("HTTP/1.1 200 OK\r\n\r\nall until close".utf8)).only)
        #expect(close.head?.framing == .untilClose && close.head?.keepAlive == false)
        #expect(close.body == Array("all until close".utf8))

        let old = try #require(parseResponses(Array("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)).only)
        #expect(old.head?.keepAlive == false)
        let oldKept = try #require(
            parseResponses(Array("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n".utf8)).only)
        #expect(oldKept.head?.keepAlive == true)
    }

    /// RFC 9112 §6.3 rules 1–2: no body for HEAD, 1xx, 204 and 304, whatever the fields say.
    @Test func bodilessResponses() throws {
        let toHEAD = parseResponses(
            Array(
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8
            ),
            toHEAD: [true, true])
        #expect(toHEAD.error == nil && toHEAD.messages.count == 2, "\(toHEAD)")
        #expect(toHEAD.messages.allSatisfy { $0.head?.framing == HTTP1Framing.none && $0.body.isEmpty })
        // A chunked body after a response to HEAD is not its body: it is unsolicited.
        #expect(
            parseResponses(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8), toHEAD: [true])
                .error == .unsolicitedResponse)
        let notModified = try #require(
            parseResponses(Array("HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n".utf8)).only)
        #expect(notModified.head?.framing == HTTP1Framing.none && notModified.head?.keepAlive == true)
        #expect(parseResponses(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)).only?.head?.framing == HTTP1Framing.none)
    }

    @Test func interimResponses() throws {
        let wire =
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let message = try #require(parseResponses(Array(wire.utf8)).only)
        #expect(message.interim.map(\.status) == [100, 103])
        #expect(message.interim[1].fields.first("link") == "</a.css>; rel=preload")
        #expect(message.head?.status == 200 && message.body == Array("ok".utf8))
    }

    /// After a 101 the parser takes nothing: the bytes that follow are the tunnel's.
    @Test func switchingProtocols() throws {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(toHEAD: false)
        let wire = Array(
            "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n\u{81}\u{05}hello"
                .utf8)
        let (consumed, event) = try parser.parse(wire)
        guard case .head(let head)? = event else {
            Issue.record("expected the 101 head")
            return
        }
        #expect(head.status == 101 && head.framing == .none && !head.keepAlive)
        let rest = Array(wire[consumed...])
        #expect(try parser.parse(rest) == (0, .end(trailers: HTTP1Fields())))
        #expect(parser.isUpgraded)
        #expect(try parser.parse(rest) == (0, nil))
        #expect(try parser.finish() == nil)
        #expect(parseResponses(wire).upgraded)
    }

    @Test func keepAliveResponsesInSequence() {
        let wire =
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n"
        for size in [1, 3, 200] {
            let outcome = parseResponses(Array(wire.utf8), toHEAD: [false, false], chunk: size)
            #expect(outcome.error == nil)
            #expect(outcome.messages.map { $0.head?.status } == [200, 404])
            #expect(outcome.messages.map(\.body) == [Array("a".utf8), Array("b".utf8)])
        }
    }

    @Test func unsolicitedAndEndOfStream() throws {
        var idle = HTTP1ResponseParser()
        #expect(try idle.parse([UInt8]()) == (0, nil))
        #expect(try idle.finish() == nil)
        #expect(throws: HTTP1ParseError(.unsolicitedResponse)) { try idle.parse(Array("HTTP/1.1 200 OK\r\n".utf8)) }
        var waiting = HTTP1ResponseParser()
        waiting.expectResponse(toHEAD: false)
        #expect(throws: HTTP1ParseError(.truncatedMessage)) { try waiting.finish() }
    }

    @Test func statusLineLimit() {
        let line = "HTTP/1.1 200 " + String(repeating: "r", count: 8192 - 13)
        #expect(parseResponses(Array((line + "\r\nContent-Length: 0\r\n\r\n").utf8)).only != nil)
        #expect(parseResponses(Array((line + "r\r\nContent-Length: 0\r\n\r\n").utf8)).error == .statusLineTooLong)
    }
}
