import Foundation
import OAuth
import Reactor

/// The request path's first steps: a request's context (forwarded headers, request ID),
/// then the verdict of the request pipeline: refused, a login endpoint, metadata, a decision,
/// or a route to admit and forward.
extension Worker {
    /// What the gateway keeps for this client connection (made on first use).
    func memo(_ connection: ClientConnection) -> ConnectionMemo {
        if let memo = connection.context.map({ unsafeDowncast($0, to: ConnectionMemo.self) }) { return memo }
        let memo = ConnectionMemo()
        connection.context = memo
        return memo
    }

    /// Whether the connection's peer is a trusted proxy, decided once per connection and
    /// config generation.
    func peerTrusted(_ connection: ClientConnection) -> Bool {
        guard hasTrustedProxies else { return false }
        let memo = memo(connection)
        if memo.trustGeneration != configGeneration {
            memo.peerTrusted = config.trustedProxies.contains { $0.contains(connection.peer) }
            memo.trustGeneration = configGeneration
        }
        return memo.peerTrusted
    }

    func handle(_ ex: ServerExchange) {
        // In flight until its last byte is written (or its client is gone): a drain must not
        // stop the loop with a finished reply still in the socket buffer.
        metrics.inflight += 1
        ex.responder.observer = self
        let start = clock()
        let head = ex.head
        let fields = head.fields
        let trusted = peerTrusted(ex.connection)
        let host = fields.firstAndCount("Host")
        // A client's own X-Forwarded-* and X-Request-Id are read only if it is a trusted proxy.
        let ctx = RequestContext(
            forwarded: trusted
                ? ForwardedHeaders.compute(
                    .init(
                        peer: ex.connection.peer, peerTrusted: true, scheme: ex.connection.isTLS ? "https" : "http",
                        host: host.first, xForwardedFor: fields.values("X-Forwarded-For"),
                        xForwardedProto: fields.first("X-Forwarded-Proto"),
                        xForwardedHost: fields.first("X-Forwarded-Host"), xRequestID: fields.first("X-Request-Id")),
                    newRequestID: ids.next)
                : ForwardedHeaders.untrusted(
                    peer: ex.connection.peer, scheme: ex.connection.isTLS ? "https" : "http", host: host.first,
                    requestID: ids.next()),
            start: start, method: head.methodName, path: "", route: "-", routeID: -1)
        ctx.behindTrustedProxy = trusted
        if let tracer {
            (ctx.trace, ctx.dropClientTraceContext) = tracer.begin(
                fields, trusted: trusted, peer: ex.connection.peer, startNanos: Tracer.nowNanos())
            // The calls made while this request is handled are its (Tracer+Calls).
            tracer.current = ctx.trace
        }
        defer { tracer?.current = nil }
        // Decision mode (nginx auth_request, forward auth, Envoy ext_authz): see Worker+Decision,
        // and for ext_authz over gRPC, Worker+ExtAuthzCheck.
        if decisionEnabled, config.decision.extAuthzGRPC, head.target == Self.checkPath {
            serveCheck(ex, ctx: ctx, trusted: trusted)
            return
        }
        if decisionEnabled, let kind = decisionKind(head.target) {
            decide(ex, kind, forwarded: ctx.forwarded, trusted: trusted, ctx: ctx)
            return
        }
        switch RequestPipeline.prepare(head, peerTrusted: trusted, policy: requestPolicy, host: host, hosts: hosts)
        {
        case .reject(let status, let error, let description):
            ctx.path = String(head.target.prefix(256))
            answer(
                ex, ctx, ErrorResponse.make(status, error: error, description: description, requestID: ctx.requestID),
                close: status == 400)
        case .login(let endpoint, let path, let query):
            ctx.path = path
            handleLoginEndpoint(ex, endpoint, query: query, origin: origin(ctx.forwarded), ctx: ctx)
        case .protectedResourceMetadata(let document, let path):
            ctx.path = path
            ctx.route = ProtectedResourceDocument.logRoute
            answer(ex, ctx, document.response(to: head.method, requestID: ctx.requestID))
        case .forward(let plan, let path, let query, let build):
            ctx.path = path
            if UpgradeExchange.asksWebSocket(head) {
                ctx.route = plan.route.name
                ctx.routeID = plan.metricID
                if let refusal = upgradeRefusal(ex, route: plan.route, ctx: ctx) {
                    answer(ex, ctx, refusal, close: true)
                    return
                }
                ctx.upgrade = true
                upgradePending(ex)
            }
            guard let pool = plan.pool else {
                ctx.route = plan.route.name
                ctx.routeID = plan.metricID
                answer(
                    ex, ctx,
                    ErrorResponse.make(
                        502, error: "bad_gateway", description: "no upstream", requestID: ctx.requestID,
                        detail: "pool missing"))
                return
            }
            // A token_exchange route whose token this connection had exchanged already goes
            // on at once, as a route that admits on the head alone does (below).
            let exchangesOnly = plan.exchanges && plan.mcp == nil
            if exchangesOnly, let admission = admitAtOnce(ex, head, plan: plan, path: path, query: query, ctx: ctx) {
                if let admitted = exchangedAtOnce(admission) {
                    forward(ex, ctx: ctx, pool: pool, request: build.request(admitted, ex: ex, ctx: ctx))
                } else {
                    exchangeToken(ex, ctx, plan: plan, admission: admission) { [unowned self] ctx, admitted in
                        self.forward(ex, ctx: ctx, pool: pool, request: build.request(admitted, ex: ex, ctx: ctx))
                    }
                }
                return
            }
            // Stages after admission: an MCP route reads and judges the call in the body, then
            // a token_exchange route trades the caller's token for the upstream's.
            if plan.mcp != nil || plan.exchanges {
                var next: Admitted = { [unowned self] ctx, admission in
                    self.forward(ex, ctx: ctx, pool: pool, request: build.request(admission, ex: ex, ctx: ctx))
                }
                if plan.exchanges {
                    let forward = next
                    next = { [unowned self] ctx, admission in
                        self.exchangeToken(ex, ctx, plan: plan, admission: admission, then: forward)
                    }
                }
                if let rules = plan.mcp {
                    let exchanged = next
                    next = { [unowned self] ctx, admission in
                        self.judgeMCPCall(ex, ctx, rules: rules, plan: plan, admission: admission, then: exchanged)
                    }
                }
                admit(
                    ex, head: head, plan: plan, path: path, query: query, forwarded: ctx.forwarded, ctx: ctx,
                    triedAtOnce: exchangesOnly, allowed: next)
                return
            }
            // A route that admits the request on its head alone (auth: none, a let-through
            // preflight) forwards it at once, without the callback a pending decision needs.
            if let admission = admitAtOnce(ex, head, plan: plan, path: path, query: query, ctx: ctx) {
                forward(ex, ctx: ctx, pool: pool, request: build.request(admission, ex: ex, ctx: ctx))
                return
            }
            admit(
                ex, head: head, plan: plan, path: path, query: query, forwarded: ctx.forwarded, ctx: ctx,
                triedAtOnce: true
            ) {
                [unowned self] ctx, admission in
                self.forward(ex, ctx: ctx, pool: pool, request: build.request(admission, ex: ex, ctx: ctx))
            }
        }
    }

    /// Reads a body the gateway must read itself (a form token, the logout form, a
    /// back-channel logout token), bounded by `ownBodyLimit`; a larger one gets 413 and is
    /// never buffered whole.
    func readOwnBody(
        _ ex: ServerExchange, _ ctx: RequestContext, limit: Int = ownBodyLimit, then use: @escaping ([UInt8]) -> Void
    ) {
        ex.body.collect(limit: limit) { [unowned self] result in
            switch result {
            case .success(let bytes): use(bytes)
            case .failure(.tooLarge):
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        413, error: "invalid_request", description: "the request body is too large",
                        requestID: ctx.requestID), close: true)
            case .failure(let why):
                // Too slow (silence, the body's pace): RFC 9110 §15.5.9's 408.
                self.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        why.isTimeout ? 408 : 400, error: "invalid_request",
                        description: why.isTimeout
                            ? "the request body took too long" : "the request body did not arrive",
                        requestID: ctx.requestID, detail: "body: \(why)"), close: true)
            }
        }
    }

    /// The public origin of this request, as far as it can be trusted (see RequestOrigin).
    func origin(_ forwarded: ForwardedHeaders) -> RequestOrigin.Origin? {
        RequestOrigin.select(
            publicURLs: config.publicURLs, scheme: forwarded.forwardedProto, host: forwarded.forwardedHost ?? "",
            fromTrustedProxy: forwarded.originFromTrustedProxy)
    }
}
