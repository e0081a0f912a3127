import Reactor

/// One worker's access log: each line is encoded straight into the worker's own buffer,
/// which goes to the `LogSink` whole — when unbuffered, at the end of the loop turn that made
/// it, with the turn's other lines; else when it holds `bufferSize` bytes or its oldest line
/// is `flushInterval` old (nginx's `access_log … buffer=… flush=…`). Never waits: the sink's
/// thread does the writing. Loop-thread only.
final class AccessLogWriter {
    let sink: LogSink
    private let bufferSize: Int
    private let flushInterval: Double
    private let loop: EventLoop
    /// Unchecked exclusivity on what every line touches: loop-thread only, and neither the
    /// line's encoding nor the sink's `submit` calls back into the writer.
    @exclusivity(unchecked) private var line: JSONLineBytes
    @exclusivity(unchecked) private var lines = 0
    /// Armed by the first line of a buffer; fires once, `flushInterval` later.
    private var timer: LoopTimer?
    /// Unbuffered: armed by a turn's first line, fires as the loop's next turn ends (a
    /// timer due at once), so that a turn's lines cost the sink's lock and a wake-up once,
    /// not once a request.
    private var turnEnd: LoopTimer?
    @exclusivity(unchecked) private var turnEndArmed = false

    init(sink: LogSink, output: AccessLogOutput, loop: EventLoop) {
        self.sink = sink
        bufferSize = output.bufferSize
        flushInterval = output.flushInterval
        self.loop = loop
        line = JSONLineBytes(capacity: output.bufferSize == 0 ? 512 : output.bufferSize + 4096)
    }

    func record(_ r: consuming AccessLogRecord) {
        // A sink that is not taking lines would drop this one: it is counted, not made.
        if sink.saturated.load(ordering: .relaxed) {
            sink.dropUnmade(1)
            return
        }
        AccessLogLine.append(r, to: &line)
        lineAdded()
    }

    func record(_ r: consuming TunnelLogRecord) {
        if sink.saturated.load(ordering: .relaxed) {
            sink.dropUnmade(1)
            return
        }
        AccessLogLine.append(r, to: &line)
        lineAdded()
    }

    private func lineAdded() {
        lines += 1
        if bufferSize == 0 {
            guard !turnEndArmed else { return }
            let t =
                turnEnd
                ?? LoopTimer(loop: loop, seconds: 0, armed: false) { [unowned self] in
                    self.turnEndArmed = false
                    self.flush()
                }
            turnEnd = t
            turnEndArmed = true
            t.start()
        } else if line.bytes.count >= bufferSize {
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
