import ExtAuthz
import JOSE
import Logging
import Reactor

/// The request an ext_authz `Check` asks about, which every answer of the call is shaped by
/// (`ExtAuthzAnswer` writes it as a `CheckResponse`).
final class ExtAuthzCheck {
    let head: HTTPRequestHead
    /// What the CheckRequest says of the request: its method, scheme, host, path and fields
    /// (lower-case names, for the header changes).
    let attributes: CheckAttributes
    var fields: [CheckAttributes.Field] { attributes.fields }
    /// The request as a decision judges it.
    let original: DecisionRequest

    init(head: HTTPRequestHead, attributes: CheckAttributes, original: DecisionRequest) {
        self.head = head
        self.attributes = attributes
        self.original = original
    }
}

/// Envoy's gRPC authorization service (`decision.ext_authz_grpc`):
/// `envoy.service.auth.v3.Authorization/Check` on every HTTP/2 listener, what Envoy's
/// `ext_authz` filter, Envoy Gateway, Istio (`envoyExtAuthzGrpc`) and the Gateway API's
/// `ExternalAuth` with `protocol: GRPC` call. The `CheckRequest` describes the client's
/// request; it is judged by the same stages as every decision (`DecisionEndpoint.judge`), and the
/// verdict goes back as a `CheckResponse` (`CheckVerdict`, `ExtAuthzVerdictStage`).
///
/// The call itself is refused with a gRPC status, never a verdict: from a peer outside
/// `trusted_proxies` (PERMISSION_DENIED), without `decision.secret` in its metadata
/// (UNAUTHENTICATED), or with a body that is not one well-formed `CheckRequest`
/// (INVALID_ARGUMENT). Envoy treats each as the authorization service failing.
struct ExtAuthzService {
    static let checkPath = "/envoy.service.auth.v3.Authorization/Check"
    let services: WorkerServices
    /// The route plans' last stage for a Check: the allowed verdict.
    let verdict: any Stage

    func serve(_ ex: ServerExchange, ctx: RequestContext, trusted: Bool) {
        ctx.kind = .decisionCall
        let config = services.config
        let answers = ExtAuthzAnswer(services: services)
        ctx.place(path: Self.checkPath, route: "ext_authz")
        guard ex.head.version.major == 2, ex.head.method == .POST, GRPCCall(ex.head.fields) == .grpc else {
            // gRPC over HTTP/2 (PROTOCOL-HTTP2.md): any other content type is 415.
            services.answer(
                ex, ctx,
                ErrorResponse.make(
                    415, error: "invalid_request",
                    description: "the ext_authz Check service takes gRPC calls (POST, application/grpc) over HTTP/2",
                    requestID: ctx.requestID, detail: "ext_authz: not a gRPC call"))
            return
        }
        guard trusted else {
            answers.refuseCall(
                ex, ctx, .permissionDenied, "the ext_authz service answers only trusted_proxies", logStatus: 403,
                detail: "ext_authz call from untrusted peer \(ex.connection.peer)")
            return
        }
        if let secret = config.decision.secret {
            let sent = ex.head.fields.firstAndCount(DecisionConfig.secretHeader)
            // Constant time: the position of the first wrong byte is never timed.
            guard sent.count == 1, let value = sent.first, ConstantTime.equals(Array(value.utf8), secret) else {
                answers.refuseCall(
                    ex, ctx, .unauthenticated, "the ext_authz service answers only with decision.secret",
                    logStatus: 401,
                    detail:
                        "ext_authz call from \(ex.connection.peer) \(sent.count == 0 ? "without" : "with a wrong") secret"
                )
                return
            }
        }
        let limits = CheckRequestReader.Limits(
            maxFields: HTTP1Limits().maxHeaderCount, maxFieldBytes: config.limits.maxHeaderSize,
            maxBodyBytes: config.decision.maxBodyBytes)
        ex.body.collect(limit: limits.maxMessageBytes + GRPCMessage.prefixBytes) { result in
            let body: [UInt8]
            switch result {
            case .success(let bytes): body = bytes
            case .failure(.tooLarge):
                // The client's fields made it this large: a verdict on its request (431, as a
                // proxied request gets), never the service failing, which failure_mode_allow
                // would let through.
                answers.denyDescribed(
                    ex, ctx, 431, "the request's header fields are too large",
                    detail: "ext_authz: message too large")
                return
            case .failure(let why):
                answers.refuseCall(
                    ex, ctx, why.isTimeout ? .deadlineExceeded : .cancelled, "the CheckRequest did not arrive",
                    logStatus: why.isTimeout ? 408 : 400, detail: "ext_authz body: \(why)")
                return
            }
            let message: ArraySlice<UInt8>
            switch GRPCMessage.unary(body) {
            case .success(let m): message = m
            case .failure(let problem):
                answers.refuseCall(
                    ex, ctx, problem.status, problem.message, logStatus: 400, detail: "ext_authz: \(problem.message)")
                return
            }
            let attributes: CheckAttributes
            switch CheckRequestReader.read(Array(message), limits: limits) {
            case .success(let a): attributes = a
            case .failure(let refusal):
                if let status = refusal.httpStatus {
                    answers.denyDescribed(ex, ctx, status, refusal.reason, detail: "ext_authz: \(refusal.reason)")
                } else {
                    answers.refuseCall(
                        ex, ctx, .invalidArgument, refusal.reason, logStatus: 400,
                        detail: "ext_authz: \(refusal.reason)")
                }
                return
            }
            judge(ex, ctx, attributes)
        }
    }

    /// The request the `CheckRequest` describes, judged as every decision is: the DPoP `htu`
    /// is its scheme, host and path; its fields carry the credentials.
    private func judge(_ ex: ServerExchange, _ call: RequestContext, _ a: CheckAttributes) {
        let original = DecisionRequest(method: a.method, scheme: a.scheme, host: a.host, target: a.path, style: .envoy)
        if case .failure(let problem) = DecisionRequest.check(original) {
            ExtAuthzAnswer(services: services).denyDescribed(ex, call, 400, problem.description, detail: problem.detail)
            return
        }
        var fields = HTTP1Fields()
        for field in a.fields { fields.append(field.name, field.value) }
        fields.append("Host", a.host)
        let head = HTTPRequestHead(methodName: a.method, target: a.path, version: (1, 1), fields: fields)
        // What Envoy says of the client: its address and its request id (for the log line and
        // the answer's X-Request-Id, so both sides name the request alike).
        let forwarded = ForwardedHeaders(
            forwardedFor: a.sourceAddress ?? ex.connection.peer, forwardedProto: a.scheme, forwardedHost: a.host,
            requestID: a.requestID ?? call.requestID, originFromTrustedProxy: true)
        let ctx = RequestContext(forwarded: forwarded, start: call.start, method: a.method)
        ctx.behindTrustedProxy = true
        ctx.kind = .extAuthz(ExtAuthzCheck(head: head, attributes: a, original: original))
        ctx.tracing.trace = call.trace
        DecisionEndpoint(services: services, verdict: verdict).judge(
            ex, original, head: head, forwarded: forwarded, ctx: ctx)
    }
}

/// How a judged `Check` is answered: every answer of the call is a `CheckResponse` about the
/// request it describes, or the call's own refusal (a gRPC status).
struct ExtAuthzAnswer {
    let services: WorkerServices

    /// A refusal or an own answer of a judged `Check` (through `answer`), as Envoy applies it.
    func answer(_ ex: ServerExchange, _ ctx: RequestContext, _ response: GatewayResponse, judged: ExtAuthzCheck) {
        let config = services.config
        let requestPolicy = services.requestPolicy
        // Shaped for the client that asked (a page is JSON for a non-browser), as a proxied
        // request's answer is.
        let shaped =
            response.page != nil && response.problem != nil && !Pages.wantsHTML(judged.head)
            ? response.jsonForm(requestID: ctx.requestID) : response
        let finished = config.pages.finish(shaped, requestID: ctx.requestID)
        let verdict: [UInt8]
        if finished.status < 300 {
            // A login endpoint or metadata, which Envoy sends on to the gateway itself: the
            // client's forged identity headers and the like still go, its cookies stay (the
            // callback needs the login state).
            let rule = RouteResolver.ClientFieldRule(
                policy: requestPolicy, listed: [], reservedPrefix: requestPolicy.reservedPrefix,
                peerTrusted: false, dropAuthorization: false, dropProof: false, dropTraceContext: false,
                preflight: false,
                ownCookies: [], ownedFields: [])
            verdict = CheckVerdict.allowed(identity: [], fields: judged.fields, rule: rule, responseFields: [])
        } else {
            // The service failing only where it cannot judge (a store, key server or AS out);
            // every other refusal is a verdict.
            var outage = false
            if case .unavailable = ctx.rejection { outage = true }
            verdict = CheckVerdict.denied(finished, requestID: ctx.requestID, outage: outage)
        }
        sendCheckResponse(
            ex, ctx, verdict, logStatus: finished.status, detail: finished.detail, reason: finished.reason)
    }

    /// A unary gRPC answer: the `CheckResponse`, then `grpc-status: 0` in the trailers. The
    /// log line keeps the HTTP status the verdict stands for.
    func sendCheckResponse(
        _ ex: ServerExchange, _ ctx: RequestContext, _ message: [UInt8], logStatus: Int, detail: String?,
        reason: String?
    ) {
        let gone = !ex.responder.isConnected
        services.requestFinished(
            ctx, status: gone ? 499 : logStatus, bytes: 0, upstreamSeconds: 0,
            detail: gone ? "client gone: " + (detail ?? "") : detail, reason: reason)
        let r = ex.responder
        r.fields.append("content-type", "application/grpc")
        r.startStreaming(status: 200, close: services.draining)
        r.write(ByteQueue(GRPCMessage.framed(message)).chunk)
        var trailers = HTTP1Fields()
        trailers.append("grpc-status", "0")
        r.trailers(trailers)
        r.finish()
    }

    /// The request the message describes refused before it was judged (fields a proxy could
    /// not have received, or past the gateway's limits): a denied verdict with `status`, as
    /// a proxied request would get it.
    func denyDescribed(
        _ ex: ServerExchange, _ ctx: RequestContext, _ status: Int, _ description: String, detail: String
    ) {
        services.log.warning(
            "ext_authz request refused",
            metadata: [
                "request_id": .string(ctx.requestID), "peer": .string(ex.connection.peer), "reason": .string(detail)
            ])
        let answer = ErrorResponse.make(
            status, error: "invalid_request", description: description, requestID: ctx.requestID, detail: detail)
        sendCheckResponse(
            ex, ctx, CheckVerdict.denied(answer, requestID: ctx.requestID, outage: false), logStatus: status,
            detail: detail, reason: nil)
    }

    /// The call itself refused (trailers-only, no `CheckResponse`): Envoy treats it as the
    /// authorization service failing.
    func refuseCall(
        _ ex: ServerExchange, _ ctx: RequestContext, _ status: GRPCStatus, _ message: String, logStatus: Int,
        detail: String
    ) {
        services.log.warning(
            "ext_authz call refused",
            metadata: [
                "request_id": .string(ctx.requestID), "peer": .string(ex.connection.peer), "reason": .string(detail)
            ])
        let gone = !ex.responder.isConnected
        services.requestFinished(
            ctx, status: gone ? 499 : logStatus, bytes: 0, upstreamSeconds: 0,
            detail: gone ? "client gone: " + detail : detail)
        for (name, value) in GRPCTrailersOnly.fields(.grpc, status: status, message: message) {
            ex.responder.fields.append(name, value)
        }
        ex.responder.respond(status: 200, close: services.draining, trailersOnly: true)
    }
}
