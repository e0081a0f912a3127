import OTLP

/// One traced request: the trace it belongs to, the gateway's SERVER span for it, and the
/// CLIENT span of its upstream call, whose id the upstream's `traceparent` names.
/// Loop-thread only, like the request.
final class RequestTrace {
    let traceID: TraceID
    /// The caller's span when the gateway joined its trace; 0 for a trace of its own.
    let parentSpanID: UInt64
    let traceState: String?
    let serverSpanID: UInt64
    let upstreamSpanID: UInt64
    let startNanos: UInt64
    let peer: String
    /// Set when the upstream call begins (`ProxyExchange.start`); 0: no upstream call.
    var upstreamStartNanos: UInt64 = 0
    /// The upstream's URL (scheme, authority, path: never the query) and status, once known.
    var upstreamURL = ""
    var upstreamAuthority = ""
    var upstreamStatus = 0
    /// Why the upstream call failed (`timeout`, `unreachable`), for the CLIENT span's status.
    var upstreamFailure: String? = nil

    init(
        traceID: TraceID, parentSpanID: UInt64, traceState: String?, serverSpanID: UInt64, upstreamSpanID: UInt64,
        startNanos: UInt64, peer: String
    ) {
        self.traceID = traceID
        self.parentSpanID = parentSpanID
        self.traceState = traceState
        self.serverSpanID = serverSpanID
        self.upstreamSpanID = upstreamSpanID
        self.startNanos = startNanos
        self.peer = peer
    }

    /// The `traceparent` the upstream gets: this trace, the gateway's CLIENT span, sampled.
    var upstreamTraceparent: InlineArray<55, UInt8> {
        TraceContext(traceID: traceID, spanID: upstreamSpanID, sampled: true).traceparentBytes
    }

    /// The `traceparent` a call made for this request (introspection, a token exchange)
    /// carries: `spanID` is that call's CLIENT span.
    func traceparent(for spanID: UInt64) -> String {
        TraceContext(traceID: traceID, spanID: spanID, sampled: true).traceparent
    }

    /// Appends the SERVER span, and the upstream call's CLIENT span when there was one.
    /// Attributes follow OpenTelemetry's HTTP semantic conventions; none holds a credential,
    /// a cookie or a query (which may hold either).
    func appendSpans(_ ctx: RequestContext, status: Int, endNanos: UInt64, to out: inout [SpanRecord]) {
        typealias A = SpanRecord.Attribute
        // A refusal before routing logs the target as sent: its query (which may hold a
        // token, RFC 6750 §2.3) stays out of the span.
        let path = ctx.path.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(ctx.path[..<$0]) } ?? ctx.path
        let method = Self.method(ctx.method)
        // Room for every attribute below at once: the array is not grown on the way.
        var attributes: [A] = []
        attributes.reserveCapacity(18)
        attributes.append(A("http.request.method", .string(method)))
        attributes.append(A("url.path", .string(path)))
        attributes.append(A("url.scheme", .string(ctx.forwarded.forwardedProto)))
        attributes.append(A("http.response.status_code", .int(Int64(status))))
        attributes.append(A("network.peer.address", .string(peer)))
        attributes.append(A("tokengate.request_id", .string(ctx.requestID)))
        // Only what a trusted proxy said: another client's Host is its own to choose.
        if ctx.forwarded.originFromTrustedProxy, let host = ctx.forwarded.forwardedHost {
            attributes.append(A("server.address", .string(host)))
        }
        let routed = ctx.routeID >= 0 || ctx.route != "-"
        if routed { attributes.append(A("http.route", .string(ctx.route))) }
        // What authentication decided: `allowed`, or the code the client was refused with
        // (`invalid_token`, `insufficient_scope`, `unavailable`, …) and why.
        attributes.append(A("tokengate.auth.outcome", .string(ctx.rejection?.code ?? "allowed")))
        if let reason = ctx.rejection?.reason?.code {
            attributes.append(A("tokengate.refusal.reason", .string(reason)))
        }
        // A Shared Signals event refused it: which one.
        if let revoked = ctx.state[RevocationNote.Key.self] {
            attributes.append(A("tokengate.refusal.reason", .string(revoked.reason)))
            if let jti = revoked.jti { attributes.append(A("tokengate.ssf.jti", .string(jti))) }
        }
        // The API key that admitted the request, by its public id (never the key).
        if let key = ctx.caller?.apiKey { attributes.append(A("tokengate.api_key.id", .string(key))) }
        if let a = ctx.state[AuthorizationNote.Key.self] {
            attributes.append(A("tokengate.authz.authorizer", .string(a.authorizer)))
            attributes.append(A("tokengate.authz.decision", .string(a.outcome.rawValue)))
            attributes.append(A("tokengate.authz.cached", .bool(a.cached)))
            attributes.append(A("tokengate.authz.wait_us", .int(Int64(a.micros))))
        }
        // On an MCP route: the call, as the access log names it (the client's text, cut short).
        if let call = ctx.mcpCall {
            attributes.append(A("mcp.method", .string(call.method)))
            if let name = call.name { attributes.append(A("mcp.name", .string(name))) }
        }
        if let policy = ctx.state[RateLimitRefusal.Key.self]?.policy {
            attributes.append(A("tokengate.refusal.reason", .string("rate_limited")))
            attributes.append(A("tokengate.rate_limit.policy", .string(policy)))
        }
        out.append(
            SpanRecord(
                traceID: traceID, spanID: serverSpanID, parentSpanID: parentSpanID, parentIsRemote: parentSpanID != 0,
                traceState: traceState, name: routed ? "\(method) \(ctx.route)" : method, kind: .server,
                startNanos: startNanos, endNanos: endNanos, attributes: attributes,
                // HTTP semantic conventions: a server span is an error for a 5xx only.
                error: status >= 500 ? "" : nil))
        if upstreamStartNanos != 0 {
            var client: [A] = [
                A("http.request.method", .string(method)), A("url.full", .string(upstreamURL)),
                A("server.address", .string(upstreamAuthority))
            ]
            if upstreamStatus != 0 { client.append(A("http.response.status_code", .int(Int64(upstreamStatus)))) }
            if let failure = upstreamFailure { client.append(A("error.type", .string(failure))) }
            out.append(
                SpanRecord(
                    traceID: traceID, spanID: upstreamSpanID, parentSpanID: serverSpanID, traceState: traceState,
                    name: method, kind: .client, startNanos: upstreamStartNanos, endNanos: endNanos,
                    attributes: client,
                    error: upstreamFailure != nil || upstreamStatus >= 500 ? (upstreamFailure ?? "") : nil))
        }
    }

    /// The HTTP semantic conventions' method: one RFC 9110 §9 names (and PATCH), else
    /// `_OTHER`, so that a client's made-up methods cannot mint span names without end.
    static func method(_ name: String) -> String {
        switch name {
        case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH": name
        default: "_OTHER"
        }
    }
}
