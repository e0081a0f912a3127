import Reactor

/// Request buffering: a request's body is read whole (memory, then a temp file) before its
/// upstream call starts, as nginx's `proxy_request_buffering` does, so a client that
/// trickles its body holds only its connection to the gateway. The body then goes upstream
/// at the upstream's pace, with `Content-Length`. Streams that must flow as they come are
/// left alone: gRPC (a bidirectional call answers as it reads), upgrades, and routes with
/// `request_buffering: false`.
extension Worker {
    /// Whether `request`'s body is read whole before the call: the route buffers, there is a
    /// body still to read from the client, and it is no stream. A gRPC call streams only
    /// HTTP/2 to HTTP/2: the content type alone, which any client may send, keeps no other
    /// body from being buffered.
    func readsBodyFirst(
        _ request: UpstreamCall.Request, _ ex: ServerExchange, _ ctx: RequestContext, pool: UpstreamPool
    ) -> Bool {
        guard ctx.buffersRequest, !ctx.upgrade, requestSpoolBudget != nil, config.limits.requestSpoolTotal > 0,
            let body = request.body, !(body is BufferedRequestBody), !(body is SpooledRequestBody)
        else { return false }
        switch body.framing {
        case .none, .length(0): return false
        // A body announced larger than the whole budget could never be held: it streams,
        // as it would have without buffering, rather than being refused for its size.
        case .length(let n) where n > UInt64(config.limits.requestSpoolTotal): return false
        case .length, .streamed: break
        }
        guard ex.head.version.major == 2, pool.endpoint.http2 else { return true }
        return GRPCCall(ex.head.fields) != .grpc
    }

    /// Reads the body, then hands the request on to its pool; a body that fails is answered
    /// as a streamed one would have been (413, 408, 400), a body with no room to go 503.
    func readBodyFirst(
        _ ex: ServerExchange, ctx: RequestContext, pool: UpstreamPool, request: consuming UpstreamCall.Request
    ) {
        guard let budget = requestSpoolBudget, let body = request.body else { return }
        let limits = config.limits
        let whole = SpooledRequestBody(
            reading: body, memory: limits.requestBuffer, directory: limits.spoolDirectory, budget: budget,
            maxBytes: limits.maxBodySize)
        var request = request
        request.body = whole
        // `whole` keeps this closure (and the request in it) until it calls it, once.
        whole.read { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .whole:
                self.handOn(ex, ctx: ctx, pool: pool, request: request)
            case .failed(.clientGone):
                self.answer(ex, ctx, ErrorResponse.clientGone(requestID: ctx.requestID))
            case .failed(let why):
                self.answer(ex, ctx, ErrorResponse.clientBodyFailed(why, requestID: ctx.requestID), close: true)
            case .noRoom:
                self.log.warning(
                    "request body could not be spooled (no file, a write error, or request_spool_total reached)",
                    metadata: ["request_id": "\(ctx.requestID)"])
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        503, error: "temporarily_unavailable", description: "the request body cannot be held now",
                        requestID: ctx.requestID, headers: [("Retry-After", Self.upstreamRetryAfter)],
                        detail: "request body spool"),
                    close: true)
            }
        }
    }
}
