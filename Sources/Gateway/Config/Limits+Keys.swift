import Yams

extension Limits {
    /// The keys of `limits:`, each said once: its reference row (type and default, checked
    /// against `Limits()` by ConfigReferenceTests) and its reader, here or, for the body pace
    /// and the buffering keys, in ConfigParser+Pacing and ConfigParser+Spool.
    static let keyTable = ConfigKeyTable<Limits, ConfigReader>([
        .init("max_body_size", type: "size", default: "`4MB`", checkedBy: ConfigDefault.size(Limits().maxBodySize)) {
            l, n, p, r in
            if let v = r.size(n, path: p) { l.maxBodySize = v }
        },
        .init(
            "grpc_max_message_size", type: "size (1B to 1GB)", default: "`4MB`",
            checkedBy: ConfigDefault.size(Limits().grpcMaxMessageSize)
        ) { l, n, p, r in
            guard let v = r.size(n, path: p) else { return }
            if (1...(1 << 30)).contains(v) {
                l.grpcMaxMessageSize = v
            } else {
                r.problem(p, n, "must be from 1B to 1GB (gRPC's own default is 4MB)")
            }
        },
        .init(
            "max_header_size", type: "size", default: "`32KB`", checkedBy: ConfigDefault.size(Limits().maxHeaderSize)
        ) { l, n, p, r in
            guard let v = r.size(n, path: p) else { return }
            if v < 1024 { r.problem(p, n, "must be at least 1KB") } else { l.maxHeaderSize = v }
        },
        .init(
            "client_idle_timeout", type: "duration (at least 1s)", default: "`60s`",
            checkedBy: ConfigDefault.duration(Limits().clientIdleTimeout)
        ) { l, n, p, r in
            if let v = r.duration(n, path: p) { l.clientIdleTimeout = max(v, 1) }
        },
        .init(
            "shutdown_grace", type: "duration", default: "`30s`",
            checkedBy: ConfigDefault.duration(Limits().shutdownGrace)
        ) { l, n, p, r in
            if let v = r.duration(n, path: p) { l.shutdownGrace = v }
        },
        .init(
            "max_connections", type: "number", default: "`10000`",
            checkedBy: ConfigDefault.number(Limits().maxConnections)
        ) { l, n, p, r in
            if let v = number(n, path: p, 1...1_000_000, r) { l.maxConnections = v }
        },
        .init(
            "header_timeout", type: "duration (at least 100ms)", default: "`10s`",
            checkedBy: ConfigDefault.duration(Limits().headerTimeout)
        ) { l, n, p, r in
            if let v = r.duration(n, path: p) { l.headerTimeout = max(v, 0.1) }
        },
        .init(
            "body_timeout", type: "duration (at least 100ms)", default: "`30s`",
            checkedBy: ConfigDefault.duration(Limits().bodyTimeout)
        ) { l, n, p, r in
            if let v = r.duration(n, path: p) { l.bodyTimeout = max(v, 0.1) }
        },
        .init(
            "continue_timeout", type: "duration", default: "`1s`",
            checkedBy: ConfigDefault.duration(Limits().continueTimeout)
        ) { l, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v > 30 {
                r.problem(p, n, "must be at most 30s (e.g. 1s; 0 answers 100 at once without asking the upstream)")
            } else {
                l.continueTimeout = v
            }
        },
        .init(
            "tunnel_idle_timeout", type: "duration", default: "`300s`",
            checkedBy: ConfigDefault.duration(Limits().tunnelIdleTimeout)
        ) { l, n, p, r in
            guard let v = r.duration(n, path: p) else { return }
            if v < 0.1 { r.problem(p, n, "must be at least 100ms (e.g. 300s)") } else { l.tunnelIdleTimeout = v }
        },
        .init("max_tunnels", type: "number", default: "`10000`", checkedBy: ConfigDefault.number(Limits().maxTunnels)) {
            l, n, p, r in
            if let v = number(n, path: p, 1...1_000_000, r) { l.maxTunnels = v }
        },
        .init(
            "body_deadline", type: "duration, or `off`", default: "`5m`",
            checkedBy: ConfigDefault.duration(Limits().bodyDeadline ?? 0),
            read: ConfigParser.bodyDeadline),
        .init(
            "body_min_rate", type: "size per second, or `off`", default: "`1KB/s`",
            checkedBy: { cell in ConfigDefault.firstValue(cell).flatMap(ConfigParser.minRate) == Limits().bodyMinRate },
            read: ConfigParser.bodyMinRate),
        .init(
            "body_min_rate_grace", type: "duration", default: "`5s`",
            checkedBy: ConfigDefault.duration(Limits().bodyMinRateGrace), read: ConfigParser.bodyMinRateGrace),
        .init(
            "response_buffer", type: "size (4KB to 16MB)", default: "`64KB`",
            checkedBy: ConfigDefault.size(Limits().responseBuffer), read: ConfigParser.buffer(\.responseBuffer)),
        .init(
            "request_buffer", type: "size (4KB to 16MB)", default: "`64KB`",
            checkedBy: ConfigDefault.size(Limits().requestBuffer), read: ConfigParser.buffer(\.requestBuffer)),
        .init(
            "response_spool_max", type: "size, or `0` (never spool)", default: "`1GB`",
            checkedBy: ConfigDefault.size(Limits().responseSpoolMax), read: ConfigParser.spoolSize(\.responseSpoolMax)),
        .init(
            "spool_total", type: "size, or `0` (never spool an answer)", default: "`8GB`",
            checkedBy: ConfigDefault.size(Limits().spoolTotal), read: ConfigParser.spoolSize(\.spoolTotal)),
        .init(
            "request_spool_total", type: "size, or `0` (request bodies stream)", default: "`1GB`",
            checkedBy: ConfigDefault.size(Limits().requestSpoolTotal), read: ConfigParser.spoolSize(\.requestSpoolTotal)
        ),
        .init(
            "request_spool_per_client", type: "percentage of `request_spool_total` (1% to 100%)", default: "`10%`",
            checkedBy: { cell in
                ConfigDefault.firstValue(cell).flatMap(ConfigParser.share) == Limits().requestSpoolPerClient
            },
            read: ConfigParser.requestSpoolPerClient),
        .init(
            "spool_dir", type: "path of a writable directory", default: "`/tmp`",
            checkedBy: ConfigDefault.text(Limits().spoolDirectory), read: ConfigParser.spoolDirectory)
    ])

    /// A whole number in `range`, else the problem that says the range.
    private static func number(_ n: Node, path p: String, _ range: ClosedRange<Int>, _ r: ConfigReader) -> Int? {
        guard let s = r.string(n, path: p) else { return nil }
        if let v = Int(s), range.contains(v) { return v }
        r.problem(p, n, "must be a number from \(range.lowerBound) to \(range.upperBound)")
        return nil
    }
}
