import Foundation
import JOSE
import Reactor

/// The end of every request: the gateway's own answers, the identity headers it maps,
/// the access log line and the metrics.
extension Worker {
    /// The one door for every answer the gateway writes itself: the response (through the
    /// exchange's responder, which answers exactly once and sends nothing to a client that
    /// is gone), then the access log line and the metrics. Streamed proxy answers end in
    /// `requestFinished` (see `ProxyExchange`).
    func answer(
        _ ex: ServerExchange, _ ctx: RequestContext, _ response: GatewayResponse, upstreamSeconds: Double = 0,
        close: Bool = false
    ) {
        if let check = ctx.extAuthzCheck {
            answerCheck(ex, ctx, response, judged: check)
            return
        }
        // A page with a problem (a login step that is unavailable) is JSON for a non-browser.
        let shaped =
            response.page != nil && response.problem != nil && !Pages.wantsHTML(ex.head)
            ? response.jsonForm(requestID: ctx.requestID) : response
        // A gRPC call's refusal is trailers-only: judged here, on a refusal's path only.
        let grpc = shaped.isGRPCRefusal && !ctx.isVerdict ? GRPCCall(ex.head.fields) : nil
        let response = grpc == nil ? config.pages.finish(shaped, requestID: ctx.requestID) : shaped
        let gone = !ex.responder.isConnected
        // Logged first: by the time a client holds the answer, its log line exists.
        // 499: client closed the request (nginx's convention, for logs and metrics only).
        // The log keeps the HTTP status the refusal stands for (a gRPC one is sent as 200).
        requestFinished(
            ctx, status: gone ? 499 : response.status, bytes: gone || grpc != nil ? 0 : response.body.utf8.count,
            upstreamSeconds: upstreamSeconds,
            detail: gone ? "client gone: " + (response.detail ?? "") : response.detail,
            reason: response.reason)
        if let grpc {
            response.sendGRPC(grpc, ex.responder, requestID: ctx.requestID, close: close || draining)
        } else {
            response.send(ex.responder, requestID: ctx.requestID, close: close || draining)
        }
    }

    /// The route's identity headers for these claims. A claim whose value cannot be a header
    /// value (a control byte: RFC 9110 §5.5) gives no header, and the log says which one —
    /// never the value, which is the caller's.
    func identityHeaders(_ route: RouteConfig, _ claims: JSONObject, _ ctx: RequestContext) -> [(String, String)] {
        route.identityHeaders.values(for: claims) { header in
            self.log.warning(
                "identity header omitted",
                metadata: [
                    "request_id": .string(ctx.requestID), "route": .string(ctx.route), "header": .string(header),
                    "reason": "the claim's value has a character a header value may not hold (RFC 9110 §5.5)"
                ])
        }
    }

    /// The request's answer is written out or its client is gone: it is no longer in flight.
    func responderCompleted(_ responder: Responder, flushed: Bool) {
        metrics.inflight -= 1
        if draining { drainProgress() }
    }

    /// `reason`: a stable code for why the gateway answered as it did (else the rejection's).
    func requestFinished(
        _ ctx: RequestContext, status: Int, bytes: Int, upstreamSeconds: Double, detail: String?, reason: String? = nil
    ) {
        let seconds = clock() - ctx.start
        metrics.record(routeID: ctx.routeID, status: status, seconds: seconds)
        if let trace = ctx.trace, let tracer {
            tracer.requestFinished(trace, ctx, status: status)
        }
        if let accessLog {
            accessLog.record(
                AccessLogRecord(
                    requestID: ctx.requestID, method: ctx.method, path: ctx.path, route: ctx.route, status: status,
                    bytes: bytes, durationMicros: Int((seconds * 1e6).rounded()),
                    upstreamMicros: Int((upstreamSeconds * 1e6).rounded()), sub: ctx.subject,
                    clientID: ctx.clientID, issuer: ctx.issuer, rejection: ctx.rejection?.code,
                    reason: reason ?? ctx.rejection?.reason?.code, detail: detail))
        }
    }
}
