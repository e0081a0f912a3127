import Reactor
import Testing

/// The request parser without sockets: every refusal with its exact code and status, the
/// acceptances beside them, and the properties a connection relies on (chunking does not
/// matter, pipelined bytes stay unconsumed, a refusal is final).
@Suite("HTTP/1.1 request parser")
struct HTTP1RequestParserTests {
    static let all = HTTP1RequestCases.refusals + HTTP1RequestCases.acceptances

    @Test(arguments: HTTP1RequestCases.refusals)
    func refuses(_ c: HTTP1Case) {
        let outcome = parseRequests(c.wire)
        #expect(outcome.error == c.code, "\(outcome)")
        #expect(outcome.messages.isEmpty)
    }

    @Test(arguments: HTTP1RequestCases.acceptances)
    func accepts(_ c: HTTP1Case) {
        let outcome = parseRequests(c.wire)
        #expect(outcome.error == nil && outcome.messages.count == 1 && outcome.idle, "\(outcome)")
    }

    /// Byte-at-a-time, small odd chunks and everything at once give the same requests and
    /// the same refusal, for every case of the catalogue.
    @Test(arguments: all)
    func chunkingDoesNotMatter(_ c: HTTP1Case) {
        let whole = parseRequests(c.wire)
        for size in [1, 2, 3, 7, 64] {
            #expect(parseRequests(c.wire, chunk: size) == whole, "chunk size \(size)")
        }
    }

    /// One byte at a time, or cut in two anywhere, every case gets the same verdict as when
    /// it arrives whole: the same requests and the same refusal, with the same code.
    @Test(arguments: all)
    func splittingAnywhereDoesNotMatter(_ c: HTTP1Case) {
        let whole = parseRequests(c.wire)
        #expect(whole.error == c.code, "\(whole)")
        for cuts in everyFeeding(c.wire.count) {
            let outcome = parseRequests(c.wire, cuts: cuts)
            #expect(outcome == whole && outcome.error == c.code, "cut at \(cuts): \(outcome)")
        }
    }

    @Test func statusPerCode() {
        let statuses = Dictionary(
            HTTP1RequestCases.refusals.map { ($0.code!.rawValue, $0.code!.status) }, uniquingKeysWith: { a, _ in a })
        #expect(statuses["unsupported_transfer_coding"] == 501)
        #expect(statuses["unsupported_version"] == 505)
        #expect(statuses["http2_preface"] == 505)
        #expect(statuses["unsupported_expectation"] == 417)
        #expect(statuses["content_length_with_transfer_encoding"] == 400)
        #expect(statuses["bare_lf"] == 400)
        #expect(HTTP1ParseError(.requestLineTooLong).status == 414)
        #expect(HTTP1ParseError(.tooManyHeaders).status == 431)
        #expect(HTTP1ParseError(.headerSectionTooLarge).status == 431)
    }

    @Test func headValues() throws {
        let wire =
            "GET /p?q=1 HTTP/1.1\r\nHost: a.example\r\nX-Mixed-Case:  \t v a l \t \r\nx-empty:\r\nX-Mixed-Case: 2\r\n\r\n"
        let head = try #require(parseRequests(Array(wire.utf8)).only).head
        #expect(head.method == "GET")
        #expect(head.target == "/p?q=1")
        #expect(head.targetForm == .origin)
        #expect(head.version == .http11)
        #expect(head.fields.map(\.name) == ["Host", "X-Mixed-Case", "x-empty", "X-Mixed-Case"])
        #expect(head.fields.map(\.value) == ["a.example", "v a l", "", "2"])
        #expect(head.fields.first("x-mixed-case") == "v a l")
        #expect(head.fields.first("HOST") == "a.example")
        #expect(head.fields.first("missing") == nil)
        var seen: [String] = []
        head.fields.forEachField { seen.append(String(decodingUTF8: $0) + "=" + String(decodingUTF8: $1)) }
        #expect(seen == ["Host=a.example", "X-Mixed-Case=v a l", "x-empty=", "X-Mixed-Case=2"])
        #expect(head.framing == .none)
        #expect(head.keepAlive)
        #expect(!head.expectsContinue)
        #expect(head.upgrade.isEmpty)
        #expect(
            head.fields
                == HTTP1Fields([
                    ("Host", "a.example"), ("X-Mixed-Case", "v a l"), ("x-empty", ""), ("X-Mixed-Case", "2")
                ]))
    }

    @Test func obsTextIsKeptAsBytes() throws {
        let c = HTTP1RequestCases.acceptances.first { $0.name == "obs-text in a value" }!
        let head = try #require(parseRequests(c.wire).only).head
        #expect(Array(head.fields[1].valueBytes) == [0x63, 0x61, 0x66, 0xC3, 0xA9, 0x20, 0xFF])
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
        ("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false),
        ("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, CLOSE\r\n\r\n", false),
        ("GET / HTTP/1.0\r\n\r\n", false),
        ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        ("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false)
    ])
    func keepAlive(_ wire: String, _ expected: Bool) throws {
        #expect(try #require(parseRequests(Array(wire.utf8)).only).head.keepAlive == expected)
    }

    @Test func framingAndBodies() throws {
        let cl = try #require(
            parseRequests(Array((HTTP1RequestCases.post + "Content-Length: 5\r\n\r\nhello").utf8)).only)
        #expect(cl.head.framing == .contentLength(5))
        #expect(cl.body == Array("hello".utf8))
        var parser = HTTP1RequestParser()
        let (_, event) = try parser.parse(
            Array((HTTP1RequestCases.post + "Content-Length: 18446744073709551615\r\n\r\n").utf8))
        guard case .head(let head)? = event else {
            Issue.record("no head: \(String(describing: event))")
            return
        }
        #expect(head.framing == .contentLength(.max))
        let zero = try #require(parseRequests(Array((HTTP1RequestCases.post + "Content-Length: 0\r\n\r\n").utf8)).only)
        #expect(zero.head.framing == .contentLength(0) && zero.body.isEmpty)
    }

    @Test func chunkedWithExtensionsAndTrailers() throws {
        let wire =
            HTTP1RequestCases.post
            + "Transfer-Encoding: chunked\r\n\r\n5;a=b;c\r\nhello\r\n1 ; q = \"x \\\"y\\\"\"\r\n!\r\n0;last\r\nX-Checksum: 1234\r\nx-other:  v \r\n\r\n"
        let message = try #require(parseRequests(Array(wire.utf8)).only)
        #expect(message.head.framing == .chunked)
        #expect(message.body == Array("hello!".utf8))
        #expect(message.trailers == HTTP1Fields([("X-Checksum", "1234"), ("x-other", "v")]))
    }

    @Test func expectAndUpgrade() throws {
        let c = try #require(
            parseRequests(Array((HTTP1RequestCases.post + "Expect: 100-continue\r\nContent-Length: 0\r\n\r\n").utf8))
                .only)
        #expect(c.head.expectsContinue)
        // RFC 9110 §10.1.1: a 100-continue expectation on HTTP/1.0 is ignored.
        let old = try #require(
            parseRequests(Array("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n".utf8)).only)
        #expect(!old.head.expectsContinue)
        let up = try #require(
            parseRequests(
                Array(
                    (HTTP1RequestCases.get + "Connection: keep-alive, Upgrade\r\nUpgrade: websocket, h2c\r\n\r\n").utf8)
            ).only)
        #expect(up.head.upgrade == ["websocket", "h2c"])
        // Upgrade without the connection option is not a request to upgrade (RFC 9110 §7.8).
        let noOption = try #require(
            parseRequests(Array((HTTP1RequestCases.get + "Upgrade: websocket\r\n\r\n").utf8)).only)
        #expect(noOption.head.upgrade.isEmpty)
    }

    @Test(arguments: [
        ("GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n", HTTP1RequestHead.TargetForm.absolute),
        ("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", .asterisk),
        ("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", .authority),
        ("GET //x HTTP/1.1\r\nHost: a\r\n\r\n", .origin)
    ])
    func targetForms(_ wire: String, _ form: HTTP1RequestHead.TargetForm) throws {
        #expect(try #require(parseRequests(Array(wire.utf8)).only).head.targetForm == form)
    }
}
