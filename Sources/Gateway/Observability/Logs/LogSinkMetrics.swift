import Synchronization

/// The log sinks' counters for `/metrics`, one sample per sink (`sink`: `stdout`, `stderr`,
/// or `file` for the access log's own file).
enum LogSinkMetrics {
    static func text(_ sinks: [LogSink]) -> String {
        var out = PrometheusText()
        let named = sinks.map { (name: label($0.destination), sink: $0) }
        out.labelled(
            "tokengate_log_lines_dropped_total", .counter,
            help: "Log lines not written: the sink was not taking them (a pipe nobody reads) or a write failed.",
            label: "sink", named.map { ($0.name, $0.sink.droppedLines.load(ordering: .relaxed)) })
        out.labelled(
            "tokengate_log_write_errors_total", .counter,
            help: "Failed log writes (a full disk, a closed pipe) and failed reopens of the access log's file.",
            label: "sink", named.map { ($0.name, $0.sink.writeErrors.load(ordering: .relaxed)) })
        return out.text
    }

    private static func label(_ d: LogSink.Destination) -> String {
        switch d {
        case .standardOutput: "stdout"
        case .standardError: "stderr"
        case .file: "file"
        }
    }
}
