import Foundation
public import Logging

/// A swift-log handler writing one JSON object per line to standard output:
/// `{"ts":…,"level":…,"msg":…, metadata…}`. One `write(2)` per line, so lines from several
/// worker threads never interleave.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String

    public init(label: String, level: Logger.Level = .info) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?,
        source: String, file: String, function: String, line: UInt
    ) {
        var out =
            "{\"ts\":\"\(JSONLogHandler.timestamp())\",\"level\":\"\(level)\",\"msg\":\"\(JSONText.escape(message.description))\""
        var merged = metadata
        if let explicit { merged.merge(explicit) { $1 } }
        for (k, v) in merged.sorted(by: { $0.key < $1.key }) {
            out += ",\"\(JSONText.escape(k))\":" + JSONLogHandler.render(v)
        }
        out += "}\n"
        out.withUTF8 { buf in
            var p = buf.baseAddress!
            var left = buf.count
            while left > 0 {
                let n = write(1, p, left)
                if n <= 0 { break }
                p += n
                left -= n
            }
        }
    }

    static func render(_ v: Logger.Metadata.Value) -> String {
        switch v {
        case .string(let s): return "\"\(JSONText.escape(s))\""
        case .stringConvertible(let c):
            if let n = c as? Int { return String(n) }
            if let d = c as? Double { return d.isFinite ? String(d) : "null" }
            if let b = c as? Bool { return b ? "true" : "false" }
            return "\"\(JSONText.escape(c.description))\""
        case .array(let a): return "[" + a.map(render).joined(separator: ",") + "]"
        case .dictionary(let d):
            return "{"
                + d.sorted(by: { $0.key < $1.key }).map { "\"\(JSONText.escape($0.key))\":\(render($0.value))" }.joined(
                    separator: ",") + "}"
        }
    }

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var tm = tm()
        var secs = ts.tv_sec
        gmtime_r(&secs, &tm)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
            tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1_000_000)
    }
}
