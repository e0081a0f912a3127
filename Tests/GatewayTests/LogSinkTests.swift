import Foundation
import Glibc
import Reactor
import Testing

@testable import Gateway

@Suite("Log sinks: whole lines, written by their own thread, bounded, reopened by path")
struct LogSinkTests {
    func tempDir() -> String {
        let dir = NSTemporaryDirectory() + "tg-logsink-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init)
    }

    func submit(_ sink: LogSink, _ texts: [String]) {
        var buffer = Array(texts.map { $0 + "\n" }.joined().utf8)
        sink.submit(&buffer, lines: texts.count)
        #expect(buffer.isEmpty, "handed over")
    }

    @Test func everyLineSubmittedIsWrittenInOrderByClose() throws {
        let path = tempDir() + "/access.log"
        let sink = try LogSink(path: path, capacity: 1 << 20)
        for i in 0..<1000 { submit(sink, ["{\"n\":\(i)}"]) }
        submit(sink, (1000..<1010).map { "{\"n\":\($0)}" })
        #expect(sink.close(within: 10))
        #expect(try lines(path) == (0..<1010).map { "{\"n\":\($0)}" })
        #expect(sink.droppedLines.load(ordering: .relaxed) == 0)
    }

    @Test func unbufferedLinesGoOverTogetherAsTheirLoopTurnEnds() throws {
        let path = tempDir() + "/access.log"
        let sink = try LogSink(path: path, capacity: 1 << 20)
        let loop = EventLoop()
        let writer = AccessLogWriter(sink: sink, output: AccessLogOutput(), loop: loop)
        func record(_ id: String) {
            writer.record(
                AccessLogRecord(
                    requestID: id, method: "GET", path: "/", route: "-", status: 200, bytes: 0, durationMicros: 1,
                    upstreamMicros: 0))
        }
        var inTurn: [String] = []
        loop.execute {
            record("a")
            record("b")
            // Still the worker's while its turn runs.
            sink.flush(within: 1)
            inTurn = (try? lines(path)) ?? ["unreadable"]
            loop.schedule(after: 0.05) { record("c") }
        }
        let stop = LoopTimer(loop: loop, seconds: 0.3) { loop.stop() }
        loop.run()
        stop.cancel()
        #expect(inTurn.isEmpty)
        sink.flush(within: 5)
        let ids = try lines(path).map { try #require($0.firstMatch(of: /"request_id":"(.)"/)?.1).description }
        #expect(ids == ["a", "b", "c"])
        #expect(sink.close(within: 5))
    }

    @Test func appendsToAFileThatExists() throws {
        let path = tempDir() + "/access.log"
        try "old\n".write(toFile: path, atomically: false, encoding: .utf8)
        let sink = try LogSink(path: path, capacity: 1 << 20)
        submit(sink, ["new"])
        sink.close(within: 10)
        #expect(try lines(path) == ["old", "new"])
    }

    @Test func aPathThatCannotBeOpenedIsRefusedAtOnce() {
        #expect(throws: LogSink.OpenError.self) { try LogSink(path: "/nonexistent-dir/x/access.log", capacity: 1024) }
    }

    @Test func reopenWritesToTheNewFileAfterARename() throws {
        let dir = tempDir()
        let path = dir + "/access.log"
        let sink = try LogSink(path: path, capacity: 1 << 20)
        submit(sink, ["before"])
        sink.flush(within: 10)
        try FileManager.default.moveItem(atPath: path, toPath: dir + "/access.log.1")
        submit(sink, ["still old"])  // before the reopen: into the renamed file
        sink.flush(within: 10)
        sink.reopen()
        submit(sink, ["after"])
        sink.close(within: 10)
        #expect(try lines(dir + "/access.log.1") == ["before", "still old"])
        #expect(try lines(path) == ["after"])
    }

    /// A pipe nobody reads: `submit` still returns at once, what does not fit is dropped
    /// and counted, and what was taken comes out whole once somebody reads.
    @Test func aSinkThatStopsReadingDropsAndCountsInsteadOfWaiting() throws {
        let fifo = tempDir() + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { Glibc.close(reader) }
        let sink = try LogSink(path: fifo, capacity: 16 << 10)
        let line = "{\"pad\":\"" + String(repeating: "x", count: 90) + "\"}"
        let count = 20_000  // 2 MB: far past the pipe, the writer's staging and the queue
        for _ in 0..<count { submit(sink, [line]) }
        let dropped = sink.droppedLines.load(ordering: .relaxed)
        // At most pipe (64 KiB) + staging (64 KiB) + a batch and the queue (16 KiB each) taken.
        #expect(dropped >= count - 2500)
        // Saturated: a writer no longer makes the lines it would hand over, only counts them.
        let saturated = sink.saturated.load(ordering: .relaxed)
        #expect(saturated)
        let writer = AccessLogWriter(sink: sink, output: AccessLogOutput(), loop: EventLoop())
        writer.record(
            AccessLogRecord(
                requestID: "r", method: "GET", path: "/", route: "-", status: 200, bytes: 0, durationMicros: 1,
                upstreamMicros: 0))
        #expect(sink.droppedLines.load(ordering: .relaxed) == dropped + 1)
        // Somebody reads now: the writer finishes, and every line that came out is whole.
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        var closed = false
        while !closed {
            let n = read(reader, &buf, buf.count)
            if n > 0 { got += buf[0..<n] }
            closed = sink.close(within: 0.05)
        }
        while case let n = read(reader, &buf, buf.count), n > 0 { got += buf[0..<n] }
        let text = String(decoding: got, as: UTF8.self)
        let out = text.split(separator: "\n")
        #expect(text.hasSuffix("\n"))
        #expect(out.allSatisfy { $0 == line })
        #expect(out.count + dropped == count)
        // The sink took lines again: they are made again.
        let saturatedAtEnd = sink.saturated.load(ordering: .relaxed)
        #expect(!saturatedAtEnd)
    }
}
