/// What the access log says about one answered request: the values, taken from the
/// request's context when it ends (`Worker.requestFinished`).
struct AccessLogRecord {
    var requestID: String
    var method: String
    var path: String
    var route: String
    var status: Int
    var bytes: Int
    var durationMicros: Int
    var upstreamMicros: Int
    var sub: String?
    var clientID: String?
    var issuer: String?
    var rejection: String?
    var reason: String?
    var detail: String?
}

/// What the access log says about a tunnel (WebSocket after a 101) when it closes.
struct TunnelLogRecord {
    var requestID: String
    var route: String
    var path: String
    var reason: String
    var bytesToUpstream: UInt64
    var bytesToClient: UInt64
    var durationMicros: Int
    var sub: String?
}

/// The access log's lines, one JSON object each, fields always in this order (docs/observability.md,
/// "Access log"): `ts`, `level`, `msg` first, as in every other log line, then
///
/// - `access`: `request_id`, `method`, `path`, `route`, `status`, `bytes`, `duration_ms`,
///   `upstream_ms`, then, only when known, `sub`, `client_id`, `issuer`, `rejection`,
///   `reason`, `detail`;
/// - `tunnel`: `request_id`, `route`, `path`, `reason`, `bytes_to_upstream`,
///   `bytes_to_client`, `duration_ms`, then `sub` when known.
enum AccessLogLine {
    static func append(_ r: AccessLogRecord, time: inout LogTimestamp, to line: inout JSONLineBytes) {
        head("\"access\"", time: &time, to: &line)
        line.key("request_id")
        line.string(r.requestID)
        line.key("method")
        line.string(r.method)
        line.key("path")
        line.string(r.path)
        line.key("route")
        line.string(r.route)
        line.key("status")
        line.int(r.status)
        line.key("bytes")
        line.int(r.bytes)
        line.key("duration_ms")
        line.milliseconds(micros: r.durationMicros)
        line.key("upstream_ms")
        line.milliseconds(micros: r.upstreamMicros)
        if let v = r.sub {
            line.key("sub")
            line.string(v)
        }
        if let v = r.clientID {
            line.key("client_id")
            line.string(v)
        }
        if let v = r.issuer {
            line.key("issuer")
            line.string(v)
        }
        if let v = r.rejection {
            line.key("rejection")
            line.string(v)
        }
        if let v = r.reason {
            line.key("reason")
            line.string(v)
        }
        if let v = r.detail {
            line.key("detail")
            line.string(v)
        }
        line.endLine()
    }

    static func append(_ r: TunnelLogRecord, time: inout LogTimestamp, to line: inout JSONLineBytes) {
        head("\"tunnel\"", time: &time, to: &line)
        line.key("request_id")
        line.string(r.requestID)
        line.key("route")
        line.string(r.route)
        line.key("path")
        line.string(r.path)
        line.key("reason")
        line.string(r.reason)
        line.key("bytes_to_upstream")
        line.unsigned(r.bytesToUpstream)
        line.key("bytes_to_client")
        line.unsigned(r.bytesToClient)
        line.key("duration_ms")
        line.milliseconds(micros: r.durationMicros)
        if let v = r.sub {
            line.key("sub")
            line.string(v)
        }
        line.endLine()
    }

    /// `{"ts":"…","level":"info","msg":…` — the same first three members as swift-log's
    /// lines (`JSONLogHandler`), so one reader takes both.
    private static func head(_ msg: String, time: inout LogTimestamp, to line: inout JSONLineBytes) {
        line.key("ts", first: true)
        line.bytes.append(UInt8(ascii: "\""))
        time.append(to: &line.bytes)
        line.bytes.append(UInt8(ascii: "\""))
        line.key("level")
        line.raw("\"info\"")
        line.key("msg")
        line.raw(msg)
    }
}
