import Reactor

/// One worker's access log: each line is encoded straight into the worker's own buffer,
/// which goes to the `LogSink` whole — at once when unbuffered, else when it holds
/// `bufferSize` bytes or its oldest line is `flushInterval` old (nginx's `access_log …
/// buffer=… flush=…`). Never waits: the sink's thread does the writing. Loop-thread only.
final class AccessLogWriter {
    let sink: LogSink
    private let bufferSize: Int
    private let flushInterval: Double
    private let loop: EventLoop
    private var line: JSONLineBytes
    private var lines = 0
    private var time = LogTimestamp()
    /// Armed by the first line of a buffer; fires once, `flushInterval` later.
    private var timer: LoopTimer?

    init(sink: LogSink, output: AccessLogOutput, loop: EventLoop) {
        self.sink = sink
        bufferSize = output.bufferSize
        flushInterval = output.flushInterval
        self.loop = loop
        line = JSONLineBytes(capacity: output.bufferSize == 0 ? 512 : output.bufferSize + 4096)
    }

    func record(_ r: AccessLogRecord) {
        // A sink that is not taking lines would drop this one: it is counted, not made.
        if sink.saturated.load(ordering: .relaxed) {
            sink.dropUnmade(1)
            return
        }
        AccessLogLine.append(r, time: &time, to: &line)
        lineAdded()
    }

    func record(_ r: TunnelLogRecord) {
        if sink.saturated.load(ordering: .relaxed) {
            sink.dropUnmade(1)
            return
        }
        AccessLogLine.append(r, time: &time, to: &line)
        lineAdded()
    }

    private func lineAdded() {
        lines += 1
        if line.bytes.count >= bufferSize {
            flush()
        } else if timer == nil {
            timer = LoopTimer(loop: loop, seconds: flushInterval) { [unowned self] in
                self.timer = nil
                self.flush()
            }
        }
    }

    /// Hands what is buffered to the sink (drain, shutdown, the flush timer).
    func flush() {
        timer?.cancel()
        timer = nil
        guard lines > 0 else { return }
        sink.submit(&line.bytes, lines: lines)
        lines = 0
    }
}
