import Reactor

/// A routed request on its way through its route's stages: what routing found, what the
/// stages have added so far (the admission, the upstream request), and where in the chain
/// it is. One per request, made by `RouteStage` (or a decision's entry), loop-thread only.
final class RoutedRequest {
    let exchange: ServerExchange
    let context: RequestContext
    let plan: RoutePlan
    /// The request being judged: the client's own, or for a decision the original request
    /// the ingress describes (its method, target, credentials and Host).
    let head: HTTPRequestHead
    let path: String
    let query: String?
    /// How the upstream request is built once the request is admitted.
    let forwarding: RequestPipeline.Forwarding
    /// What is known of the client's origin: for a decision, the original request's scheme
    /// and host, as a trusted proxy's X-Forwarded-* would say them.
    let origin: ForwardedHeaders
    let services: WorkerServices
    /// Set by the authentication stage (or a CORS preflight let through): who the request
    /// is admitted as, and what goes upstream with it. Later stages may add to it.
    var admission: Admission?
    /// Set by `RequestBufferingStage` from the admission: the request as the upstream gets it.
    var upstreamRequest: UpstreamCall.Request?

    private let stages: [any Stage]
    /// The chain's last stage when it is not the plan's (a decision's verdict).
    private let last: (any Stage)?
    /// The index of the stage that runs on `resume()` (the plan's stages, then `last`).
    var next = 0

    init(
        exchange: ServerExchange, context: RequestContext, plan: RoutePlan, head: HTTPRequestHead, path: String,
        query: String?, forwarding: RequestPipeline.Forwarding, origin: ForwardedHeaders, services: WorkerServices,
        stages: [any Stage], last: (any Stage)? = nil
    ) {
        self.exchange = exchange
        self.context = context
        self.plan = plan
        self.head = head
        self.path = path
        self.query = query
        self.forwarding = forwarding
        self.origin = origin
        self.services = services
        self.stages = stages
        self.last = last
    }

    /// Runs the stages from the next one on, until one answers or suspends.
    func resume() {
        while true {
            let stage: any Stage
            if next < stages.count {
                stage = stages[next]
            } else if next == stages.count, let last {
                stage = last
            } else {
                preconditionFailure("a chain ends in a stage that answers or hands the request on")
            }
            next += 1
            switch stage.run(self) {
            case .proceed: continue
            case .answer(let response, let close):
                answer(response, close: close)
                return
            case .suspend: return
            }
        }
    }

    /// Answers the request now (through the one door, `WorkerServices.answer`).
    func answer(_ response: GatewayResponse, close: Bool = false) {
        services.answer(exchange, context, response, close: close)
    }

    /// The admission the authentication stage made: every stage after it may rely on one.
    var admitted: Admission {
        guard let admission else { preconditionFailure("a stage after authentication ran before it") }
        return admission
    }

    /// Whether this request is judged for an ingress (a verdict, or an ext_authz Check).
    var isDecision: Bool { context.kind.isDecision }
}
