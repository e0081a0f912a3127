public import Logging

/// A swift-log handler for operational messages: one JSON object per line,
/// `{"ts":…,"level":…,"msg":…, metadata sorted by key…}`, handed whole to the standard
/// output's `LogSink`, whose thread writes it: a log call never waits on the pipe or the
/// terminal, and lines from several threads never interleave. (The access log is not
/// written through here: see `AccessLogWriter`.)
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let sink: LogSink

    public init(label: String, level: Logger.Level = .info) {
        self.label = label
        self.logLevel = level
        sink = .standardOutput
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var out = JSONLineBytes(capacity: 256)
        out.head()
        out.key("level")
        out.string(event.level.rawValue)
        out.key("msg")
        out.string(event.message.description)
        var merged = metadata
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        for (k, v) in merged.sorted(by: { $0.key < $1.key }) {
            out.key(escaping: k)
            Self.render(v, to: &out)
        }
        out.endLine()
        sink.submit(&out.bytes, lines: 1)
    }

    static func render(_ v: Logger.Metadata.Value, to out: inout JSONLineBytes) {
        switch v {
        case .string(let s): out.string(s)
        case .stringConvertible(let c):
            if let n = c as? Int {
                out.int(n)
            } else if let d = c as? Double {
                if d.isFinite { out.bytes.append(contentsOf: String(d).utf8) } else { out.null() }
            } else if let b = c as? Bool {
                out.bool(b)
            } else {
                out.string(c.description)
            }
        case .array(let a):
            out.bytes.append(UInt8(ascii: "["))
            for (i, item) in a.enumerated() {
                if i > 0 { out.bytes.append(UInt8(ascii: ",")) }
                render(item, to: &out)
            }
            out.bytes.append(UInt8(ascii: "]"))
        case .dictionary(let d):
            out.bytes.append(UInt8(ascii: "{"))
            for (i, (k, value)) in d.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.bytes.append(UInt8(ascii: ",")) }
                out.string(k)
                out.bytes.append(UInt8(ascii: ":"))
                render(value, to: &out)
            }
            out.bytes.append(UInt8(ascii: "}"))
        }
    }
}
