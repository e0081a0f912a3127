import Reactor
import Testing

/// What a connection relies on beyond one message: pipelining, the pause contract, final
/// refusals, and each limit at exactly its value and one past it.
@Suite("HTTP/1.1 request parser: streams and limits")
struct HTTP1RequestStreamTests {
    static let first = "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
    static let second = "POST /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"
    static let third = "GET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"

    @Test func pipelinedRequestsInOrder() {
        let wire = Array((Self.first + Self.second + "\r\n" + Self.third).utf8)
        for size in [1, 5, wire.count] {
            let outcome = parseRequests(wire, chunk: size)
            #expect(outcome.error == nil && outcome.idle)
            #expect(outcome.messages.map(\.head.target) == ["/1", "/2", "/3"])
            #expect(outcome.messages.map(\.body) == [Array("abc".utf8), Array("xy".utf8), []])
            #expect(outcome.messages.map(\.head.keepAlive) == [true, true, false])
        }
    }

    /// Each call stops at the end of its event: the bytes of the next request are not
    /// consumed, so a caller that stops calling (backpressure, or waiting to answer in
    /// order) keeps them to feed again.
    @Test func consumesOnlyUpToTheEndOfEachEvent() throws {
        let wire = Array((Self.first + Self.third).utf8)
        let headLength = Self.first.utf8.count - 3
        var parser = HTTP1RequestParser()
        var (consumed, event) = try parser.parse(wire)
        guard case .head? = event else {
            Issue.record("expected the head")
            return
        }
        #expect(consumed == headLength)
        var rest = Array(wire[consumed...])
        (consumed, event) = try parser.parse(rest)
        #expect(event == .body(0..<3) && consumed == 3)
        rest.removeFirst(consumed)
        (consumed, event) = try parser.parse(rest)
        #expect(event == .end(trailers: HTTP1Fields()) && consumed == 0)
        #expect(parser.isIdle)
        #expect(rest == Array(Self.third.utf8))
        (consumed, event) = try parser.parse(rest)
        guard case .head(let head)? = event else {
            Issue.record("expected the second head")
            return
        }
        #expect(head.target == "/3" && consumed == rest.count)
        (consumed, event) = try parser.parse([UInt8]())
        #expect(event == .end(trailers: HTTP1Fields()) && consumed == 0)
        (consumed, event) = try parser.parse([UInt8]())
        #expect(event == nil && consumed == 0)
    }

    @Test func bodyBytesAreRangesOfTheInput() throws {
        var parser = HTTP1RequestParser()
        _ = try parser.parse(Array((HTTP1RequestCases.post + "Content-Length: 10\r\n\r\n").utf8))
        #expect(try parser.parse(Array("0123".utf8)) == (4, .body(0..<4)))
        #expect(try parser.parse(Array("456789GET".utf8)) == (6, .body(0..<6)))
    }

    /// A valid request after a refused one is never parsed: the refusal is final.
    @Test func refusalIsFinal() throws {
        var parser = HTTP1RequestParser()
        let bad = Array((HTTP1RequestCases.post + "Transfer-Encoding: xchunked\r\n\r\n").utf8)
        #expect(throws: HTTP1ParseError(.unsupportedTransferCoding)) { try parser.parse(bad) }
        #expect(throws: HTTP1ParseError(.unsupportedTransferCoding)) {
            try parser.parse(Array((HTTP1RequestCases.get + "\r\n").utf8))
        }
        #expect(throws: HTTP1ParseError(.unsupportedTransferCoding)) { try parser.parse([UInt8]()) }
        #expect(!parser.isIdle)
    }

    /// The verdict on a CR does not wait for the chunk that holds the byte after it: a CR
    /// alone in its read, then a request, is refused as the two together are.
    @Test func loneCRInItsOwnReadIsRefused() throws {
        var parser = HTTP1RequestParser()
        #expect(try parser.parse(Array("\r".utf8)) == (1, nil))
        #expect(throws: HTTP1ParseError(.bareCR)) { try parser.parse(Array((HTTP1RequestCases.get + "\r\n").utf8)) }
        #expect(throws: HTTP1ParseError(.bareCR)) { try parser.parse([UInt8]()) }
    }

    /// The same between pipelined requests: the first is answered, the CR before the second
    /// refused, however the bytes are cut.
    @Test func loneCRBetweenPipelinedRequestsIsRefused() {
        let wire = Array((Self.first + "\r" + Self.third).utf8)
        let whole = parseRequests(wire)
        #expect(whole.messages.map(\.head.target) == ["/1"] && whole.error == .bareCR, "\(whole)")
        for cuts in everyFeeding(wire.count) {
            #expect(parseRequests(wire, cuts: cuts) == whole, "cut at \(cuts)")
        }
    }

    /// A smuggled request hidden in a refused body never comes out as a request.
    @Test func smuggledRequestAfterRefusalNeverParses() {
        let wire = Array(
            (HTTP1RequestCases.post + "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"
                + HTTP1RequestCases.get + "\r\n").utf8)
        let outcome = parseRequests(wire)
        #expect(outcome.messages.isEmpty && outcome.error == .contentLengthWithTransferEncoding)
    }

    // MARK: Limits, at exactly the default and one past it.

    static func requestLine(length: Int) -> [UInt8] {
        let pad = length - "GET / HTTP/1.1".utf8.count
        return Array(("GET /" + String(repeating: "a", count: pad) + " HTTP/1.1\r\nHost: a\r\n\r\n").utf8)
    }

    @Test func requestLineLimit() {
        #expect(parseRequests(Self.requestLine(length: 8192)).only != nil)
        #expect(parseRequests(Self.requestLine(length: 8193)).error == .requestLineTooLong)
        // Refused before the line ends: a peer that never sends LF costs at most the limit.
        var parser = HTTP1RequestParser()
        let endless = [UInt8](repeating: 0x61, count: 8194)
        #expect(throws: HTTP1ParseError(.requestLineTooLong)) { try parser.parse(Array("GET /".utf8) + endless) }
    }

    static func fields(count: Int) -> [UInt8] {
        let extra = (1..<count).map { "X-\($0): v\r\n" }.joined()
        return Array((HTTP1RequestCases.get + extra + "\r\n").utf8)
    }

    @Test func headerCountLimit() {
        #expect(parseRequests(Self.fields(count: 100)).only?.head.fields.count == 100)
        #expect(parseRequests(Self.fields(count: 101)).error == .tooManyHeaders)
    }

    /// Header bytes = every field line with its CRLF: "Host: a\r\n" (9) + "X: v…\r\n" (5 + n).
    static func headerSection(bytes: Int) -> [UInt8] {
        Array(("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: bytes - 14) + "\r\n\r\n").utf8)
    }

    @Test func headerBytesLimit() {
        #expect(parseRequests(Self.headerSection(bytes: 32768)).only != nil)
        #expect(parseRequests(Self.headerSection(bytes: 32769)).error == .headerSectionTooLarge)
        #expect(parseRequests(Self.headerSection(bytes: 40000), chunk: 1000).error == .headerSectionTooLarge)
    }

    static func chunked(_ body: String) -> [UInt8] {
        Array((HTTP1RequestCases.post + "Transfer-Encoding: chunked\r\n\r\n" + body).utf8)
    }

    @Test func chunkSizeDigitsLimit() {
        #expect(parseRequests(Self.chunked("0000000000000005\r\nhello\r\n0\r\n\r\n")).only?.body == Array("hello".utf8))
        #expect(parseRequests(Self.chunked("00000000000000005\r\nhello\r\n0\r\n\r\n")).error == .chunkSizeTooLarge)
        // 16 digits at Int.max is within both limits (the body is then just incomplete).
        #expect(parseRequests(Self.chunked("7fffffffffffffff\r\n")).error == nil)
        // Endless zeros are refused once they pass digits + extension bytes.
        #expect(parseRequests(Self.chunked(String(repeating: "0", count: 5000))).error == .chunkSizeTooLarge)
    }

    @Test func chunkExtensionLimit() {
        // The extension is every byte after the size: ";" + name.
        let atLimit = ";" + String(repeating: "e", count: 4095)
        #expect(parseRequests(Self.chunked("5" + atLimit + "\r\nhello\r\n0\r\n\r\n")).only?.body == Array("hello".utf8))
        #expect(parseRequests(Self.chunked("5" + atLimit + "e\r\nhello\r\n0\r\n\r\n")).error == .chunkExtensionTooLarge)
        #expect(
            parseRequests(Self.chunked("5" + atLimit + String(repeating: "e", count: 100))).error
                == .chunkExtensionTooLarge)
    }

    /// Trailer bytes are counted like header bytes: "X: v…\r\n" is 5 + n.
    @Test func trailerLimits() {
        let atLimit = "0\r\nX: " + String(repeating: "t", count: 8192 - 5) + "\r\n\r\n"
        #expect(parseRequests(Self.chunked(atLimit)).only?.trailers.count == 1)
        let over = "0\r\nX: " + String(repeating: "t", count: 8192 - 4) + "\r\n\r\n"
        #expect(parseRequests(Self.chunked(over)).error == .trailerSectionTooLarge)
        let many = "0\r\n" + (0..<100).map { "T\($0): v\r\n" }.joined()
        #expect(parseRequests(Self.chunked(many + "\r\n")).only?.trailers.count == 100)
        #expect(parseRequests(Self.chunked(many + "T: v\r\n\r\n")).error == .trailerSectionTooLarge)
    }

    @Test func customLimits() {
        let limits = HTTP1Limits(maxRequestLineBytes: 20, maxHeaderCount: 2, maxHeaderBytes: 30)
        #expect(parseRequests(Array("GET /1234 HTTP/1.1\r\nHost: a\r\n\r\n".utf8), limits: limits).only != nil)
        #expect(
            parseRequests(Array("GET /12345678 HTTP/1.1\r\nHost: a\r\n\r\n".utf8), limits: limits).error
                == .requestLineTooLong)
        #expect(
            parseRequests(Array("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n".utf8), limits: limits).error
                == .tooManyHeaders)
    }
}
