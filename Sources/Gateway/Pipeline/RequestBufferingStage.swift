import Reactor

/// The first stage toward the upstream: the request's body is read whole (memory, then a
/// temp file) before the upstream call starts, as nginx's `proxy_request_buffering` does, so
/// a client that trickles its body holds only its connection to the gateway. The body then
/// goes upstream at the upstream's pace, with `Content-Length`. Streams that must flow as
/// they come are left alone: gRPC (a bidirectional call answers as it reads), upgrades, and
/// routes with `request_buffering: false`. A body announced too large, or a client gone while
/// the gateway decided, ends the request here.
final class RequestBufferingStage: Stage {
    /// Request buffering's disk budget, shared by workers (nil: none).
    let budget: SpoolBudget?
    /// The route's `request_buffering`.
    let buffers: Bool
    let pool: UpstreamPool

    init(budget: SpoolBudget?, plan: RoutePlan, pool: UpstreamPool) {
        self.budget = budget
        buffers = plan.route.options.buffering.request
        self.pool = pool
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        let ex = request.exchange
        let ctx = request.context
        // What goes upstream: a form or an MCP call already read, else the client's stream.
        let body = request.admission?.body ?? ex.body
        let services = request.services
        let limits = services.config.limits
        let readWhole = budget.map { readsBodyFirst(body, ex, ctx, limits: limits, budget: $0) } ?? false
        // A gRPC call's body is bounded per message (`RequestBodyLimit`); only a body with
        // one (the client's own, not a form or an MCP call already read) is asked.
        let limit =
            body.framing == .none || body !== ex.body
            ? StreamedBodyLimit.server : RequestBodyLimit.of(ex.head.fields, limits: limits, readWhole: readWhole)
        if case .length(let n) = body.framing, n > UInt64(limit.total ?? limits.maxBodySize) {
            // Announced too large: refused before the upstream hears of it, nothing read.
            return .answer(
                ErrorResponse.make(
                    413, error: "invalid_request", description: "the request body is too large",
                    requestID: ctx.requestID), close: true)
        }
        guard ex.responder.isConnected else {
            // The client left while the gateway was deciding (keys, introspection, a session).
            return .answer(ErrorResponse.clientGone(requestID: ctx.requestID))
        }
        guard readWhole, let budget else { return .proceed }
        let client = ClientAddress.of(
            ctx.forwarded, peerTrusted: ctx.behindTrustedProxy, trustedProxies: services.config.trustedProxies)
        if case .length(let n) = body.framing, n > UInt64(limits.requestBuffer),
            !budget.hasRoom(Int(n) - limits.requestBuffer, for: client)
        {
            // RFC 9110 §10.1.1: a client that waits for 100 Continue is answered with the final
            // status instead when the body will not be taken; and one that did not wait is
            // refused before its body is read into a spool that cannot hold it.
            return .answer(Self.noRoom(ctx, services), close: true)
        }
        let whole = SpooledRequestBody(
            reading: body, memory: limits.requestBuffer, directory: limits.spoolDirectory, budget: budget,
            maxBytes: limit.total ?? limits.maxBodySize, client: client, limit: limit)
        request.spooledBody = whole
        // `whole` keeps this closure (and the request in it) until it calls it, once.
        whole.read { [services] outcome in
            switch outcome {
            case .whole:
                request.resume()
            case .failed(.clientGone):
                request.answer(ErrorResponse.clientGone(requestID: ctx.requestID))
            case .failed(let why):
                request.answer(ErrorResponse.clientBodyFailed(why, requestID: ctx.requestID), close: true)
            case .noRoom:
                request.answer(Self.noRoom(ctx, services), close: true)
            }
        }
        return .suspend
    }

    /// 503 for a body the spool cannot hold now (no file, a write error, `request_spool_total`
    /// or the client's `request_spool_per_client` share reached).
    static func noRoom(_ ctx: RequestContext, _ services: WorkerServices) -> GatewayResponse {
        services.log.warning(
            "request body could not be spooled (no file, a write error, request_spool_total or the client's share reached)",
            metadata: ["request_id": "\(ctx.requestID)"])
        return ErrorResponse.make(
            503, error: "temporarily_unavailable", description: "the request body cannot be held now",
            requestID: ctx.requestID, headers: [("Retry-After", WorkerServices.upstreamRetryAfter)],
            detail: "request body spool")
    }

    /// Whether `body` is read whole before the call: the route buffers, there is a body still
    /// to read from the client, and it is no stream. A gRPC call streams only HTTP/2 to
    /// HTTP/2: the content type alone, which any client may send, keeps no other body from
    /// being buffered.
    func readsBodyFirst(
        _ body: RequestBody, _ ex: ServerExchange, _ ctx: RequestContext, limits: Limits, budget: SpoolBudget
    ) -> Bool {
        guard buffers, !ctx.kind.isUpgrade, limits.requestSpoolTotal > 0,
            !(body is BufferedRequestBody), !(body is SpooledRequestBody)
        else { return false }
        switch body.framing {
        case .none, .length(0): return false
        // A body announced larger than the whole budget, or than one client's share of it,
        // could never be held: it streams, as it would have without buffering, rather than
        // being refused for its size.
        case .length(let n) where n > UInt64(limits.requestBuffer + budget.perSource): return false
        case .length, .streamed: break
        }
        guard ex.head.version.major == 2, pool.endpoint.http2 else { return true }
        return GRPCCall(ex.head.fields) != .grpc
    }
}
