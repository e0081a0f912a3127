import Testing

@testable import Gateway

/// The SSE reader without sockets (WHATWG HTML §9.2): every line ending, pieces cut at every
/// byte, comments, multi-line data, and the bound on one event.
@Suite("MCP tools/list: the event-stream reader")
struct MCPEventStreamReaderTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// The events of `stream` fed in pieces cut at `cuts`, and the bytes held at its end.
    func read(_ stream: [UInt8], cuts: [Int] = [], max: Int = 1 << 20) throws -> ([EventStreamReader.Event], [UInt8]) {
        var reader = EventStreamReader(maxEventBytes: max)
        var events: [EventStreamReader.Event] = []
        var start = 0
        for end in cuts + [stream.count] where end >= start {
            events += try reader.feed(stream[start..<end])
            start = end
        }
        return (events, reader.pending)
    }

    static let stream =
        ": a comment\r\nevent: message\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\n"
        + "data:one\ndata: two\ndata\n\n" + "retry: 10\rdata:  x\r\r" + "data: tail"

    @Test(arguments: [["\r\n"], ["\n"], ["\r"]])
    func everyLineEndingEndsLinesAndEvents(ending: [String]) throws {
        let text = "event: message\(ending[0])data: a\(ending[0])data: b\(ending[0])\(ending[0])data: c"
        let (events, pending) = try read(bytes(text))
        #expect(events.count == 1)
        #expect(events[0].data == bytes("a\nb"))
        #expect(events[0].fieldLines == [bytes("event: message")])
        #expect(pending == bytes("data: c"))
        #expect(events[0].leadingLF == false)
        #expect(events.flatMap(\.raw) + pending == bytes(text))
    }

    @Test func commentsMultiLineDataAndFieldsAreRead() throws {
        let (events, pending) = try read(bytes(Self.stream))
        #expect(events.map(\.data) == [bytes("{\"a\":1}"), bytes("one\ntwo\n"), bytes(" x")])
        #expect(events[0].fieldLines == [bytes("event: message"), bytes("id: 7")])
        #expect(events[2].fieldLines == [bytes("retry: 10")])
        // Byte for byte: the events and what is held are the stream.
        #expect(events.flatMap(\.raw) + pending == bytes(Self.stream))
        #expect(pending == bytes("data: tail"))
    }

    @Test func piecesCutAtEveryByteReadTheSame() throws {
        let whole = try read(bytes(Self.stream))
        let all = bytes(Self.stream)
        // A cut between a CR and its LF moves the LF to the next event's bytes; nothing else moves.
        func same(_ split: ([EventStreamReader.Event], [UInt8])) -> Bool {
            split.0.map(\.data) == whole.0.map(\.data) && split.0.map(\.fieldLines) == whole.0.map(\.fieldLines)
                && split.0.flatMap(\.raw) + split.1 == all
        }
        for cut in 0...all.count {
            #expect(same(try read(all, cuts: [cut])), "cut at \(cut)")
            for second in stride(from: cut, through: all.count, by: 5) {
                #expect(same(try read(all, cuts: [cut, second])), "cut at \(cut), \(second)")
            }
        }
        // And one byte at a time.
        #expect(same(try read(all, cuts: Array(0...all.count))))
    }

    @Test func aCRThenLFInTheNextPieceIsOneLineEnding() throws {
        // "data: a\r" | "\n\r" | "\ndata: b…": CRLF, then a blank line; not an extra one between.
        let (events, _) = try read(bytes("data: a\r\n\r\ndata: b\r\n\r\n"), cuts: [8, 10])
        #expect(events.compactMap(\.data) == [bytes("a"), bytes("b")])
        // The first event was handed back at its CR, the end of a piece: its LF went with b.
        #expect(events.map(\.leadingLF) == [false, true])
        #expect(events.map(\.raw) == [bytes("data: a\r\n\r"), bytes("\ndata: b\r\n\r\n")])
    }

    @Test func blankLinesAndEventsWithoutDataDispatchNoData() throws {
        let (events, _) = try read(bytes("\n\nid: 1\n\n: only a comment\n\ndata\n\n"))
        #expect(events.map(\.data) == [nil, nil, nil, nil, []])
    }

    @Test func aLeadingByteOrderMarkIsIgnored() throws {
        let (events, _) = try read([0xEF, 0xBB, 0xBF] + bytes("data: x\n\n"), cuts: [1, 2])
        #expect(events.first?.data == bytes("x"))
        #expect(events.first?.raw.count == 12)
    }

    @Test func anEventPastTheBoundIsRefused() throws {
        let big = "data: " + String(repeating: "x", count: 100) + "\n\n"
        #expect(throws: EventStreamReader.TooLarge.self) { try read(bytes(big), max: 64) }
        // Cut in pieces, the bound holds across them.
        #expect(throws: EventStreamReader.TooLarge.self) { try read(bytes(big), cuts: Array(0...100), max: 64) }
        // Many small events under the bound pass.
        let many = String(repeating: "data: x\n\n", count: 100)
        #expect(try read(bytes(many), max: 16).0.count == 100)
        // A line with no end, no blank line: refused too.
        #expect(throws: EventStreamReader.TooLarge.self) {
            try read(bytes(String(repeating: ": comment\n", count: 20)), max: 64)
        }
    }
}
