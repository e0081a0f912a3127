/// `access_log`: off, or where each request's line goes and how it is buffered.
enum AccessLogConfig: Sendable, Equatable {
    case off
    case on(AccessLogOutput)

    var output: AccessLogOutput? {
        if case .on(let o) = self { return o }
        return nil
    }
}

/// Where access log lines go and how long they may wait in a worker's buffer.
struct AccessLogOutput: Sendable, Equatable {
    enum Destination: Sendable, Equatable {
        case standardOutput
        /// Opened for appending at start; opened again on SIGUSR1 (logrotate).
        case file(path: String)
    }

    var destination = Destination.standardOutput
    /// `buffer`: the bytes a worker gathers before it hands them on; 0 (the default on
    /// standard output): each line as soon as it is made (with the others of its loop turn).
    var bufferSize = 0
    /// `flush`: the longest a line waits in a worker's buffer.
    var flushInterval = 1.0

    /// The largest `buffer` accepted.
    static let maxBufferSize = 16 << 20

    /// Lines waiting for the sink's thread, at most: past this they are dropped and counted.
    var sinkCapacity: Int { max(1 << 20, 16 * bufferSize) }
}
