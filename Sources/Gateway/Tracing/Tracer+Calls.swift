import OTLP
import Reactor

/// The CLIENT spans of the calls a traced request makes (the AS's endpoints, Redis), as the
/// loop's `OutboundCallObserver`. The request a call is made for is the one being handled
/// (`current`, set while the worker handles it) or the one whose earlier call's completion
/// is running (a token endpoint's answer, then userinfo; a session read, then a refresh).
/// On the main loop (`background`), a key or discovery fetch starts a trace of its own,
/// sampled at the ratio.
final class CallSpan {
    let trace: RequestTrace?
    let traceID: TraceID
    let parentSpanID: UInt64
    let spanID: UInt64
    let startNanos: UInt64
    let name: String
    var attributes: [SpanRecord.Attribute]

    init(
        trace: RequestTrace?, traceID: TraceID, parentSpanID: UInt64, spanID: UInt64, name: String,
        attributes: [SpanRecord.Attribute]
    ) {
        self.trace = trace
        self.traceID = traceID
        self.parentSpanID = parentSpanID
        self.spanID = spanID
        self.startNanos = Tracer.nowNanos()
        self.name = name
        self.attributes = attributes
    }
}

extension Tracer: OutboundCallObserver {
    /// The span a new call belongs under: the current request's SERVER span, or (main loop)
    /// a new sampled root; nil: not traced.
    private func parentForCall() -> (trace: RequestTrace?, id: TraceID, parent: UInt64)? {
        if let current { return (current, current.traceID, current.serverSpanID) }
        guard background, let id = newSampledTraceID() else { return nil }
        return (nil, id, 0)
    }

    func fetchStarting(_ request: inout FetchRequest) -> AnyObject? {
        guard let (trace, traceID, parent) = parentForCall() else { return nil }
        let spanID = nextID()
        request.headers.append(
            "traceparent: " + TraceContext(traceID: traceID, spanID: spanID, sampled: true).traceparent)
        let (url, authority) = Self.withoutQuery(request.url)
        let method = request.body == nil ? "GET" : "POST"
        return CallSpan(
            trace: trace, traceID: traceID, parentSpanID: parent, spanID: spanID, name: method,
            attributes: [
                .init("http.request.method", .string(method)), .init("url.full", .string(url)),
                .init("server.address", .string(authority))
            ])
    }

    func fetchEnded(
        _ token: AnyObject, _ request: FetchRequest, status: Int?, error: FetchError?, completion: () -> Void
    ) {
        let span = unsafeDowncast(token, to: CallSpan.self)
        if let status { span.attributes.append(.init("http.response.status_code", .int(Int64(status)))) }
        // The kind of failure only: libcurl's message names hosts and addresses.
        let failure = error.map { $0.kind == .responseTooLarge ? "response_too_large" : "transfer" }
        if let failure { span.attributes.append(.init("error.type", .string(failure))) }
        end(span, error: failure != nil || (status ?? 0) >= 500 ? (failure ?? "") : nil, then: completion)
    }

    func redisStarting(_ name: String) -> AnyObject? {
        guard let current else { return nil }
        return CallSpan(
            trace: current, traceID: current.traceID, parentSpanID: current.serverSpanID, spanID: nextID(),
            name: name,
            attributes: [.init("db.system.name", .string("redis")), .init("db.operation.name", .string(name))])
    }

    func redisEnded(_ token: AnyObject, error: RedisError?, completion: () -> Void) {
        let span = unsafeDowncast(token, to: CallSpan.self)
        let failure = error.map { "\($0.kind)" }
        if let failure { span.attributes.append(.init("error.type", .string(failure))) }
        end(span, error: failure, then: completion)
    }

    /// Records the span, then runs the caller's completion as part of the request the call
    /// was made for, so that a call it makes next is that request's too.
    private func end(_ span: CallSpan, error: String?, then completion: () -> Void) {
        record(
            SpanRecord(
                traceID: span.traceID, spanID: span.spanID, parentSpanID: span.parentSpanID,
                traceState: span.trace?.traceState, name: span.name, kind: .client, startNanos: span.startNanos,
                endNanos: Tracer.nowNanos(), attributes: span.attributes, error: error))
        let outer = current
        current = span.trace
        completion()
        current = outer
    }

    /// A URL without its query or fragment (which may hold a token), and its authority.
    static func withoutQuery(_ url: String) -> (url: String, authority: String) {
        let u = Array(url.utf8)
        let end = u.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? u.count
        var authority = ""
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            authority = String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
            // Never a userinfo (`user:password@`).
            if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        }
        let path = String(decoding: u[..<end], as: UTF8.self)
        guard let scheme = path.range(of: "://") else { return (path, authority) }
        let afterAuthority = path[scheme.upperBound...].drop { $0 != "/" }
        return (String(path[..<scheme.upperBound]) + authority + afterAuthority, authority)
    }
}
