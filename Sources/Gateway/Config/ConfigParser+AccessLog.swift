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
        AccessLogOutput.keyTable.read(map, into: &out, path: "access_log", r)
        return .on(out)
    }
}
