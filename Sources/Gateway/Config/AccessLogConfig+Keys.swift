import Yams

extension AccessLogOutput {
    /// The keys of `access_log:` as a mapping, each said once: its reference row and its
    /// reader, read here in this order (`buffer` after `path`, whose file changes the default
    /// buffer).
    static let keyTable = ConfigKeyTable<AccessLogOutput, ConfigReader>([
        .init("path", type: "path", default: "none (standard output)") { out, n, p, r in
            guard let path = r.string(n, path: p) else { return }
            if path.isEmpty || path.utf8.contains(0) {
                r.problem(p, n, "must be a file path (leave it out for standard output)")
            } else {
                // Relative to the config file, like every other path in it.
                out.destination = .file(path: path.hasPrefix("/") ? path : "\(r.baseDirectory)/\(path)")
                out.bufferSize = 64 << 10
            }
        },
        .init(
            "buffer", type: "size", default: "`64KB` for a file, `0` (each line at once) for standard output",
            checkedBy: { cell in
                // The first value is a file's; standard output's is AccessLogOutput()'s own.
                ConfigDefault.size(64 << 10)(cell) && cell.contains("`0`") && AccessLogOutput().bufferSize == 0
            }
        ) { out, n, p, r in
            guard let v = r.size(n, path: p) else { return }
            if v > AccessLogOutput.maxBufferSize {
                r.problem(p, n, "must be at most 16MB (0: each line at once)")
            } else {
                out.bufferSize = v
            }
        },
        .init(
            "flush", type: "duration", default: "`1s`",
            checkedBy: ConfigDefault.duration(AccessLogOutput().flushInterval)
        ) { out, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 0.001 || v > 3600 { r.problem(p, n, "must be from 1ms to 1h") } else { out.flushInterval = v }
        }
    ])
}

/// `store:` as a mapping, as its keys say it (`StoreConfig.keyTable`): ConfigParser.store
/// makes the store (the URL says whether the prefix is used).
struct StoreKeys {
    /// `url:` (nil inside: not a string, a problem says so).
    var url: GivenKey<String>?
    var prefix = ConfigParser.storePrefix
}

extension StoreConfig {
    /// The keys of `store:` as a mapping.
    static let keyTable = ConfigKeyTable<StoreKeys, ConfigReader>([
        .init("url", type: "`memory` or a Redis URL", default: "none: required in the mapping") { k, n, p, r in
            k.url = GivenKey(value: r.string(n, path: p), node: n)
        },
        .init(
            "prefix", type: "string", default: "`tokengate:`", checkedBy: ConfigDefault.text(ConfigParser.storePrefix)
        ) { k, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            // No braces: the keys' own hash tags keep one session's keys in one cluster slot.
            if s.utf8.count > 64
                || s.utf8.contains(where: {
                    $0 <= 0x20 || $0 >= 0x7f || $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}")
                })
            {
                r.problem(p, n, "must be up to 64 printable characters without spaces or braces")
            } else {
                k.prefix = s
            }
        }
    ])
}

extension TracingConfig {
    /// The keys of `tracing:`, each said once with its reader. Each falls back to its
    /// OpenTelemetry environment variable, read first (ConfigParser.tracing): a key in the
    /// file wins.
    static let keyTable = ConfigKeyTable<TracingConfig, ConfigReader>([
        .init(
            "otlp_endpoint", type: "http(s) URL",
            default:
                "`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; required"
        ) { t, n, p, r in
            // Checked as a URL once every source is read (ConfigParser.tracing); an empty one
            // (`${VAR:-}` unset) is none, and says so rather than turning tracing off.
            guard let s = r.string(n, path: p) else {
                t.endpoint = ""
                return
            }
            if s.isEmpty { r.problem(p, n, "\"\" is not an http(s) URL without query or userinfo") }
            t.endpoint = s
        },
        .init("service_name", type: "string", default: "`OTEL_SERVICE_NAME`, else `tokengate`") { t, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if s.isEmpty { r.problem(p, n, "must not be empty") } else { t.serviceName = s }
        },
        .init(
            "sample_ratio", type: "number from 0 to 1",
            default: "`1` (or from `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`)",
            checkedBy: { cell in ConfigDefault.firstValue(cell).flatMap(Double.init) == defaults.sampleRatio }
        ) { t, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = Double(s), v >= 0, v <= 1 {
                t.sampleRatio = v
            } else {
                r.problem(p, n, "must be a number from 0 (none) to 1 (every trace)")
            }
        },
        .init("headers", type: "mapping of header name to value", default: "`OTEL_EXPORTER_OTLP_HEADERS`") {
            t, n, p, r in
            // The file's headers replace the variable's.
            t.headers = []
            guard let m = r.mapping(n, path: p, section: nil) else { return }
            for (name, valueNode) in m.sorted(by: { $0.key < $1.key }) {
                guard let value = r.string(valueNode, path: "\(p).\(name)") else { continue }
                if let line = ConfigParser.headerLine(name, value) {
                    t.headers.append(line)
                } else {
                    r.problem("\(p).\(name)", valueNode, "is not a header name and value")
                }
            }
        },
        .init(
            "incoming", type: "`join` or `restart`", default: "`restart`",
            checkedBy: ConfigDefault.text(defaults.incoming.rawValue)
        ) { t, n, p, r in
            guard let s = r.string(n, path: p) else { return }
            if let v = TracingConfig.Incoming(rawValue: s) {
                t.incoming = v
            } else {
                r.problem(p, n, "must be join or restart")
            }
        },
        .init(
            "timeout", type: "duration", default: "`10s` (`OTEL_EXPORTER_OTLP_TIMEOUT`, in ms)",
            checkedBy: ConfigDefault.duration(defaults.timeout)
        ) { t, n, p, r in
            // Its range is checked once every source is read (ConfigParser.tracing).
            if let v = r.duration(n, path: p) { t.timeout = v }
        },
        .init("ca_file", type: "path", default: "the system's CA bundle (`OTEL_EXPORTER_OTLP_CERTIFICATE`)") {
            t, n, p, r in
            if let s = r.string(n, path: p) { t.caFile = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)" }
        }
    ])

    private static var defaults: TracingConfig { TracingConfig(endpoint: "") }
}
