import Reactor

/// The second step of every proxied request's entry, after `TrustEntry` (not a stage: it
/// finds the chain the stages are): the Host and the path normalized, then routed
/// (`RouteResolver.prepare`). A routed request starts its route's chain; one for the gateway's
/// own endpoints (decision calls, login, Protected Resource Metadata, the modules') its
/// built-in route's (`OwnRoutes`).
struct RouteEntry {
    let services: WorkerServices

    func run(_ ex: ServerExchange, _ ctx: RequestContext, trusted: Bool, host: (first: String?, count: Int)) {
        let head = ex.head
        // Decision mode (nginx auth_request, forwardAuth, ext_authz HTTP and gRPC): a call to a
        // decision endpoint is found by its exact target before anything of the request itself
        // is checked (its Host and path are the ingress's; the described request is judged).
        if services.current.decisionEnabled, let call = DecisionCalls.match(head.target, services.config.decision) {
            let policy = services.requestPolicy
            let forwarding = RouteResolver.Forwarding(
                method: head.method ?? .GET, target: "", plan: policy.ownRoutes.plan(for: call), policy: policy,
                peerTrusted: trusted, upstreamHost: "")
            let path = head.target.firstIndex(of: "?").map { String(head.target[..<$0]) } ?? head.target
            RoutedRequest(
                exchange: ex, context: ctx, path: path, query: nil, forwarding: forwarding, services: services,
                content: call.content, decisionCall: true
            ).resume()
            return
        }
        switch RouteResolver.prepare(
            head, peerTrusted: trusted, policy: services.requestPolicy, host: host, hosts: services.current.hosts)
        {
        case .reject(let status, let error, let description):
            ctx.place(path: String(head.target.prefix(256)))
            services.answer(
                ex, ctx, ErrorResponse.make(status, error: error, description: description, requestID: ctx.requestID),
                close: status == 400)
        case .ownEndpoint(let endpoint, let path, let query, let forwarding):
            // A built-in route: its chain, then the endpoint's own answer (`OwnRoutes`).
            ctx.place(path: path, route: endpoint.logRoute)
            RoutedRequest(
                exchange: ex, context: ctx, path: path, query: query, forwarding: forwarding, services: services,
                content: endpoint.content
            ).resume()
        case .forward(let plan, let path, let query, let forwarding):
            ctx.place(path: path, route: plan.name, routeID: plan.metricID, parameters: plan.parameters(in: path))
            guard plan.pool != nil else {
                services.answer(
                    ex, ctx,
                    ErrorResponse.make(
                        502, error: "bad_gateway", description: "no upstream", requestID: ctx.requestID,
                        detail: "pool missing"))
                return
            }
            RoutedRequest(
                exchange: ex, context: ctx, path: path, query: query, forwarding: forwarding, services: services
            ).resume()
        }
    }
}
