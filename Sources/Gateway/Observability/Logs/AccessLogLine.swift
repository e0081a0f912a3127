/// What the access log says about one answered request: the values, taken from the
/// request's context when it ends (`WorkerServices.requestFinished`).
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
    /// The public id of the API key that admitted the request (never the key).
    var apiKey: String? = nil
    var rejection: String?
    var reason: String?
    var detail: String?
    /// The route's authorizer and what it decided (`NAME:allow`, `NAME:deny:cached`, …), and
    /// how long the request waited for it.
    var authz: String? = nil
    var authzMicros: Int? = nil
    /// What the route's `path_template` captured (empty: no member).
    var pathParameters = PathParameters.none
    /// On an MCP route: the JSON-RPC method of the POST, and the tool, resource or prompt it
    /// names (`mcp.method`, `mcp.name`: what a gateway that routes on the mirrored headers logs).
    var mcpMethod: String? = nil
    var mcpName: String? = nil
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
///   `upstream_ms`, then, only when known, `sub`, `client_id`, `issuer`, `api_key`, `rejection`,
///   `reason`, `detail`, `authz`, `authz_ms`, `path_params` (an object, in template order),
///   `mcp.method`, `mcp.name`;
/// - `tunnel`: `request_id`, `route`, `path`, `reason`, `bytes_to_upstream`,
///   `bytes_to_client`, `duration_ms`, then `sub` when known.
enum AccessLogLine {
    /// The most bytes of a line that are not its strings: the head, `level` and `msg`, the
    /// keys with their punctuation (under 220 bytes for either kind of line), its numbers.
    /// `AccessLogLineTests` writes lines with every string escaped at the bound and every
    /// number at its longest.
    private static let fixedBound = JSONText.headBound + 256 + 5 * JSONText.numberBound

    /// Appends the line, its bound reserved once and its bytes written in one pass.
    static func append(_ r: consuming AccessLogRecord, to line: inout JSONLineBytes) {
        var bound = fixedBound + strings(r.requestID, r.method, r.path, r.route)
        bound += strings(r.sub, r.clientID, r.issuer, r.apiKey) + strings(r.rejection, r.reason, r.detail, r.authz)
        bound += strings(r.mcpMethod, r.mcpName)
        // `,"path_params":{}` and, per variable, its two strings, ":" and ",".
        for p in r.pathParameters.list {
            bound += JSONText.stringBound(p.name.utf8.count) + JSONText.stringBound(p.value.utf8.count) + 2
        }
        line.bytes.append(addingCapacity: bound) { o in
            head("\"access\"", time: &line.time, to: &o)
            string("request_id", r.requestID, to: &o)
            string("method", r.method, to: &o)
            string("path", r.path, to: &o)
            string("route", r.route, to: &o)
            JSONText.key("status", to: &o)
            JSONText.int(r.status, to: &o)
            JSONText.key("bytes", to: &o)
            JSONText.int(r.bytes, to: &o)
            JSONText.key("duration_ms", to: &o)
            JSONText.milliseconds(micros: r.durationMicros, to: &o)
            JSONText.key("upstream_ms", to: &o)
            JSONText.milliseconds(micros: r.upstreamMicros, to: &o)
            string("sub", r.sub, to: &o)
            string("client_id", r.clientID, to: &o)
            string("issuer", r.issuer, to: &o)
            string("api_key", r.apiKey, to: &o)
            string("rejection", r.rejection, to: &o)
            string("reason", r.reason, to: &o)
            string("detail", r.detail, to: &o)
            string("authz", r.authz, to: &o)
            if let micros = r.authzMicros {
                JSONText.key("authz_ms", to: &o)
                JSONText.milliseconds(micros: micros, to: &o)
            }
            if !r.pathParameters.isEmpty {
                JSONText.key("path_params", to: &o)
                o.append(UInt8(ascii: "{"))
                for (k, p) in r.pathParameters.list.enumerated() {
                    if k > 0 { o.append(UInt8(ascii: ",")) }
                    JSONText.string(utf8: p.name.utf8.span, to: &o)
                    o.append(UInt8(ascii: ":"))
                    JSONText.string(utf8: p.value.utf8.span, to: &o)
                }
                o.append(UInt8(ascii: "}"))
            }
            string("mcp.method", r.mcpMethod, to: &o)
            string("mcp.name", r.mcpName, to: &o)
            JSONText.endLine(to: &o)
        }
    }

    static func append(_ r: consuming TunnelLogRecord, to line: inout JSONLineBytes) {
        let bound = fixedBound + strings(r.requestID, r.route, r.path) + strings(r.reason, r.sub)
        line.bytes.append(addingCapacity: bound) { o in
            head("\"tunnel\"", time: &line.time, to: &o)
            string("request_id", r.requestID, to: &o)
            string("route", r.route, to: &o)
            string("path", r.path, to: &o)
            string("reason", r.reason, to: &o)
            JSONText.key("bytes_to_upstream", to: &o)
            JSONText.unsigned(r.bytesToUpstream, to: &o)
            JSONText.key("bytes_to_client", to: &o)
            JSONText.unsigned(r.bytesToClient, to: &o)
            JSONText.key("duration_ms", to: &o)
            JSONText.milliseconds(micros: r.durationMicros, to: &o)
            string("sub", r.sub, to: &o)
            JSONText.endLine(to: &o)
        }
    }

    /// `{"ts":"…","level":"info","msg":…` — the same first three members as swift-log's
    /// lines (`JSONLogHandler`), so one reader takes both.
    private static func head(_ msg: StaticString, time: inout LogTimestamp, to o: inout OutputSpan<UInt8>) {
        JSONText.head(time: &time, to: &o)
        JSONText.key("level", to: &o)
        o.append("\"info\"")
        JSONText.key("msg", to: &o)
        o.append(msg)
    }

    /// A string member, left out when there is no value.
    @inline(__always)
    private static func string(_ key: StaticString, _ value: String?, to o: inout OutputSpan<UInt8>) {
        guard let value else { return }
        JSONText.key(key, to: &o)
        JSONText.string(utf8: value.utf8.span, to: &o)
    }

    private static func strings(_ a: String?, _ b: String?, _ c: String? = nil, _ d: String? = nil) -> Int {
        func bound(_ s: String?) -> Int { s.map { JSONText.stringBound($0.utf8.count) } ?? 0 }
        return bound(a) + bound(b) + bound(c) + bound(d)
    }
}
