import Yams

extension ConfigParser {
    /// `access_log: true | false | { path, buffer, flush }`. Without `path`, standard output;
    /// a file is buffered (64KB, 1s) unless `buffer: 0`, standard output is not unless asked.
    static func accessLog(_ node: Node, _ r: ConfigReader) -> AccessLogConfig? {
        if case .scalar = node {
            guard let on = r.bool(node, path: "access_log") else { return nil }
            return on ? .on(AccessLogOutput()) : .off
        }
        guard let map = r.mapping(node, path: "access_log", section: .accessLog) else { return nil }
        var out = AccessLogOutput()
        if let n = map["path"], let path = r.string(n, path: "access_log.path") {
            if path.isEmpty || path.utf8.contains(0) {
                r.problem("access_log.path", n, "must be a file path (leave it out for standard output)")
            } else {
                // Relative to the config file, like every other path in it.
                out.destination = .file(path: path.hasPrefix("/") ? path : "\(r.baseDirectory)/\(path)")
                out.bufferSize = 64 << 10
            }
        }
        if let n = map["buffer"], let v = r.size(n, path: "access_log.buffer") {
            if v > AccessLogOutput.maxBufferSize {
                r.problem("access_log.buffer", n, "must be at most 16MB (0: each line at once)")
            } else {
                out.bufferSize = v
            }
        }
        if let n = map["flush"], let v = r.duration(n, path: "access_log.flush") {
            if v < 0.001 || v > 3600 {
                r.problem("access_log.flush", n, "must be from 1ms to 1h")
            } else {
                out.flushInterval = v
            }
        }
        return .on(out)
    }
}
