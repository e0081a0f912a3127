import Foundation
import Glibc
import Reactor
import Synchronization

/// One place log lines go — standard output, standard error or a file — and the one thread
/// that writes to it, so that no event loop ever waits on a write: a pipe nobody reads, a
/// full disk or a slow terminal holds up this thread alone. Event loops hand over whole
/// lines (`submit`), never a part of one, and only this thread writes, so lines from several
/// workers never interleave. What is waiting is bounded (`capacity` bytes): past it, lines
/// are dropped and counted, as are lines a failed write loses (Envoy's access-log files are
/// written from a flush thread too; it lets the buffer grow, this one does not).
final class LogSink: @unchecked Sendable {
    enum Destination: Equatable, Sendable {
        case standardOutput
        case standardError
        case file(path: String)

        var name: String {
            switch self {
            case .standardOutput: "stdout"
            case .standardError: "stderr"
            case .file(let path): path
            }
        }
    }

    struct OpenError: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "cannot open \(path) for writing: \(reason)" }
    }

    /// The process's standard output: operational messages, and the access log unless it
    /// has a file of its own.
    static let standardOutput = LogSink(stream: .standardOutput)
    /// Where the warning about dropped lines goes (its own thread: standard output may be
    /// the sink that stopped).
    static let standardError = LogSink(stream: .standardError)

    let destination: Destination
    /// Lines not written: the queue was full, or a write failed.
    let droppedLines = Atomic<Int>(0)
    /// Failed writes (`write(2)` errors other than EINTR/EAGAIN, and failed reopens).
    let writeErrors = Atomic<Int>(0)
    /// The queue was full at the last `submit` and the writer has not finished a write
    /// since: the sink is not taking lines (a pipe nobody reads). Writers read it before
    /// making a line, so that a line that would be dropped costs neither its encoding nor
    /// the queue's lock (`dropUnmade`).
    let saturated = Atomic<Bool>(false)

    /// Written by the writer thread alone once it runs. A file is owned here (opened in
    /// `init`, replaced by `reopen`, closed at the end of `run`); the standard streams
    /// belong to the process and are never closed.
    private var file: OutputFile
    private let capacity: Int
    /// The warning about drops, at most once per `warningInterval` seconds (monotonic),
    /// whichever thread saw them.
    private let warningNotBefore = Atomic<Int>(Int.min)
    static let warningInterval = 10

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [[UInt8]] = []
    private var queuedLines: [Int] = []
    private var queuedBytes = 0
    private var spare: [[UInt8]] = []
    private var reopenWanted = false
    private var closing = false
    private var finished = false
    /// The writer thread is inside a batch (what `flush` waits for).
    private var writing = false
    /// The writer thread sleeps until signalled (else it is busy, or napping: see `run`).
    private var idle = false

    /// A standard stream; its thread starts now.
    private init(stream: Destination) {
        destination = stream
        file = stream == .standardError ? .standardError() : .standardOutput()
        capacity = 1 << 20
        start()
    }

    /// A file, opened (created, appended to) now, so that a path that cannot be written
    /// stops the start instead of losing every line. `capacity`: the most bytes waiting.
    init(path: String, capacity: Int) throws {
        destination = .file(path: path)
        file = try Self.open(path)
        self.capacity = capacity
        start()
    }

    private static func open(_ path: String) throws -> OutputFile {
        do throws(OutputFile.OpenError) {
            return try OutputFile(appendingTo: path)
        } catch {
            throw OpenError(path: path, reason: error.reason)
        }
    }

    /// The thread holds the sink until `run` returns (after `close`).
    private func start() {
        let t = Thread { self.run() }
        t.name = "tokengate-log-\(destination == .standardError ? "stderr" : "out")"
        t.start()
    }

    /// Hands over `buffer` (whole lines, `lines` of them) without waiting; `buffer` comes
    /// back empty, with capacity. Past `capacity` bytes waiting the lines are dropped and
    /// counted. Any thread.
    func submit(_ buffer: inout [UInt8], lines: Int) {
        if buffer.isEmpty { return }
        condition.lock()
        if closing || queuedBytes + buffer.count > capacity {
            // Only with lines waiting: a buffer larger than the capacity on its own is
            // dropped, but the sink is not stuck (no batch would ever clear the mark).
            if !closing && queuedBytes > 0 { saturated.store(true, ordering: .relaxed) }
            condition.unlock()
            buffer.removeAll(keepingCapacity: true)
            noteDropped(lines, reason: closing ? "the log is closed" : "the sink is not taking lines fast enough")
            return
        }
        queuedBytes += buffer.count
        var next = spare.popLast() ?? []
        swap(&next, &buffer)
        queue.append(next)
        queuedLines.append(lines)
        if idle { condition.signal() }
        condition.unlock()
        if buffer.capacity < 256 { buffer.reserveCapacity(512) }
    }

    /// Counts `lines` that were never made because the sink is `saturated` (any thread).
    func dropUnmade(_ lines: Int) {
        noteDropped(lines, reason: "the sink is not taking lines fast enough")
    }

    /// A file sink opens its path again before its next write (logrotate renamed the old
    /// one); a standard stream ignores it. Any thread.
    func reopen() {
        guard case .file = destination else { return }
        condition.lock()
        reopenWanted = true
        condition.signal()
        condition.unlock()
    }

    /// Writes what is waiting, then stops the thread and closes a file. Waits at most
    /// `seconds`: a sink that does not take the lines by then loses them (counted), and the
    /// process goes on to exit. Returns whether everything was written.
    @discardableResult
    func close(within seconds: Double) -> Bool {
        condition.lock()
        closing = true
        condition.signal()
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !finished && condition.wait(until: deadline) {}
        let done = finished
        let lost = done ? 0 : queuedLines.reduce(0, +)
        condition.unlock()
        if lost > 0 { droppedLines.add(lost, ordering: .relaxed) }
        return done
    }

    /// Writes everything waiting so far, waiting at most `seconds`; the sink stays open.
    func flush(within seconds: Double) {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: seconds)
        while (!queue.isEmpty || writing) && !finished && condition.wait(until: deadline) {}
        condition.unlock()
    }

    // MARK: the writer thread

    private func run() {
        var batch: [[UInt8]] = []
        var batchLines: [Int] = []
        var writer = ChunkWriter()
        var napped = false
        condition.lock()
        while true {
            while queue.isEmpty && !reopenWanted && !closing {
                writing = false
                condition.broadcast()
                if napped {
                    idle = true
                    condition.wait()
                    idle = false
                } else {
                    // After a batch, a millisecond's nap that no line interrupts: under load
                    // the lines of that millisecond then cost one wake-up and one write, not
                    // a futex wake and a context switch each (unbuffered, one per request).
                    napped = true
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 0.001))
                }
            }
            napped = false
            if queue.isEmpty && !reopenWanted { break }
            writing = true
            swap(&batch, &queue)
            swap(&batchLines, &queuedLines)
            let reopen = reopenWanted
            reopenWanted = false
            condition.unlock()

            if reopen { reopenFile() }
            var bytes = 0
            for (chunk, lines) in zip(batch, batchLines) {
                bytes += chunk.count
                writer.add(chunk, lines: lines, to: self)
            }
            writer.flush(to: self)

            condition.lock()
            queuedBytes -= bytes
            // The sink took a batch: lines are worth making again.
            saturated.store(false, ordering: .relaxed)
            for var chunk in batch where spare.count < 16 {
                chunk.removeAll(keepingCapacity: true)
                spare.append(chunk)
            }
            batch.removeAll(keepingCapacity: true)
            batchLines.removeAll(keepingCapacity: true)
        }
        finished = true
        writing = false
        condition.broadcast()
        condition.unlock()
        file.close()
    }

    private func reopenFile() {
        guard case .file(let path) = destination else { return }
        do {
            let next = try Self.open(path)
            file.close()
            file = next
        } catch {
            // The old file keeps the lines: nothing is lost, but the rotation did not happen.
            writeErrors.add(1, ordering: .relaxed)
            warn("access log not reopened, still writing to the old file: \(error)")
        }
    }

    /// Writes `bytes` holding `lines` lines, all of them unless the file fails. Whether the
    /// last write stopped inside a line (then the next starts with a newline, so the fragment
    /// stays a line of its own and every other line stays valid JSON).
    fileprivate func writeAll(_ bytes: Span<UInt8>, lines: Int, midLine: inout Bool) {
        if midLine, file.write(Self.newline.span) == .written { midLine = false }
        if case .failed(let written, let reason) = file.write(bytes) {
            midLine = written > 0
            writeErrors.add(1, ordering: .relaxed)
            noteDropped(lines, reason: "write failed: \(reason)")
        }
    }

    private static let newline: [UInt8] = [UInt8(ascii: "\n")]

    /// Counts dropped lines and, at most once per interval for the process's sinks, says so
    /// on standard error (a line of its own: `submit` there never waits either).
    private func noteDropped(_ lines: Int, reason: String) {
        droppedLines.add(lines, ordering: .relaxed)
        guard destination != .standardError, warningDue() else { return }
        warn(
            "log lines dropped: \(reason) (\(droppedLines.load(ordering: .relaxed)) dropped so far); requests go on",
            lines: lines)
    }

    private func warn(_ message: String, lines: Int = 0) {
        var line = JSONLineBytes(capacity: 256)
        line.head()
        line.key("level")
        line.raw("\"warning\"")
        line.key("msg")
        line.string(message)
        line.key("log")
        line.string(destination.name)
        line.key("dropped_total")
        line.int(droppedLines.load(ordering: .relaxed))
        line.key("write_errors_total")
        line.int(writeErrors.load(ordering: .relaxed))
        line.endLine()
        Self.standardError.submit(&line.bytes, lines: 1)
    }

    private func warningDue() -> Bool {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let now = ts.tv_sec
        var next = warningNotBefore.load(ordering: .relaxed)
        while now >= next {
            let (claimed, seen) = warningNotBefore.compareExchange(
                expected: next, desired: now + Self.warningInterval, ordering: .relaxed)
            if claimed { return true }
            next = seen
        }
        return false
    }
}

/// Gathers small chunks (a line each, when unbuffered) into one `write(2)`; large ones go
/// out as they are. The writer thread's own.
private struct ChunkWriter {
    private var staging: [UInt8] = []
    private var stagedLines = 0
    private var midLine = false
    private static let size = 64 << 10

    init() { staging.reserveCapacity(Self.size) }

    mutating func add(_ chunk: [UInt8], lines: Int, to sink: LogSink) {
        if staging.count + chunk.count > Self.size { flush(to: sink) }
        if chunk.count >= Self.size {
            sink.writeAll(chunk.span, lines: lines, midLine: &midLine)
            return
        }
        staging.append(contentsOf: chunk)
        stagedLines += lines
    }

    mutating func flush(to sink: LogSink) {
        guard !staging.isEmpty else { return }
        var stopped = midLine
        sink.writeAll(staging.span, lines: stagedLines, midLine: &stopped)
        midLine = stopped
        staging.removeAll(keepingCapacity: true)
        stagedLines = 0
    }
}
