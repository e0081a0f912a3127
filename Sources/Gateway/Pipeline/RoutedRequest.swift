import Reactor

/// A routed request on its way through its route's stages: what routing found, what the
/// stages have added so far (the admission, the upstream request), and where in the chain
/// it is. One per request, made by `RouteEntry` (or a decision's entry), loop-thread only.
final class RoutedRequest {
    let exchange: ServerExchange
    let context: RequestContext
    let path: String
    let query: String?
    /// How the upstream request is built once the request is admitted; its plan is the route's.
    let forwarding: RouteResolver.Forwarding
    let services: WorkerServices
    /// A decision's original request and origin; nil for a proxied request, whose own are
    /// read where they are (copying them here cost a reference count per field).
    private let judged: JudgedRequest?

    var plan: RoutePlan { forwarding.plan }

    /// What the route's `path_template` captured, in template order (empty on other routes):
    /// for a stage that judges the request by its resource, such as a policy decision point
    /// asked about `routeTemplate` with these as its properties.
    var pathParameters: PathParameters { context.pathParameters }

    /// The route's `path_template` as the config wrote it; nil on `path:` and `path_prefix:`
    /// routes.
    var routeTemplate: String? { forwarding.plan.template?.text }

    /// The request being judged: the client's own, or for a decision the original request
    /// the ingress describes (its method, target, credentials and Host).
    var head: HTTPRequestHead {
        _read {
            if let judged { yield judged.head } else { yield exchange.head }
        }
    }

    /// What is known of the client's origin: for a decision, the original request's scheme
    /// and host, as a trusted proxy's X-Forwarded-* would say them.
    var origin: ForwardedHeaders {
        _read {
            if let judged { yield judged.origin } else { yield context.forwarded }
        }
    }
    /// Set by the authentication stage (or a CORS preflight let through): who the request
    /// is admitted as, and what goes upstream with it. Later stages may add to it.
    @exclusivity(unchecked) var admission: Admission?
    /// Set by `RequestBufferingStage` when it read the body whole: what goes upstream.
    @exclusivity(unchecked) var spooledBody: RequestBody?

    private let stages: [StageLink]
    /// The chain's last stage when it is not the plan's (a decision's verdict, an own endpoint's answer).
    private let last: (any Stage)?
    /// The index of the stage that runs on `resume()` (the plan's stages, then `last`).
    /// Unchecked exclusivity: loop-thread only, and never held across a call out.
    @exclusivity(unchecked) var next = 0
    /// The runner's loop is on the stack (`resume`), and a stage called `resume()` from
    /// within its own `run`: a callback that came at once. The loop goes on when that stage
    /// returns, rather than a second loop running inside the first.
    private var running = false
    private var resumedWithin = false

    /// A proxied request, on its route's proxy chain; or, with `content`, a request for one of
    /// the gateway's own endpoints on its built-in route's chain, whose last stage is the
    /// endpoint's own answer (`OwnRoutes`).
    init(
        exchange: ServerExchange, context: RequestContext, path: String, query: String?,
        forwarding: consuming RouteResolver.Forwarding, services: WorkerServices, content: (any Stage)? = nil,
        decisionCall: Bool = false
    ) {
        self.exchange = exchange
        self.context = context
        self.path = path
        self.query = query
        self.forwarding = forwarding
        // A decision call's built-in route runs its decision chain (`OwnEndpoint.isDecisionCall`).
        stages = decisionCall ? self.forwarding.plan.decisionChain : self.forwarding.plan.proxyChain
        self.services = services
        judged = nil
        last = content
    }

    /// A decision about `head`, the original request, on its route's decision chain; `last`:
    /// its verdict.
    init(
        exchange: ServerExchange, context: RequestContext, judging head: HTTPRequestHead, origin: ForwardedHeaders,
        path: String, query: String?, forwarding: RouteResolver.Forwarding, services: WorkerServices,
        last: any Stage
    ) {
        self.exchange = exchange
        self.context = context
        self.path = path
        self.query = query
        stages = forwarding.plan.decisionChain
        self.forwarding = forwarding
        self.services = services
        judged = JudgedRequest(head: head, origin: origin)
        self.last = last
    }

    /// Runs the stages from the next one on, until one answers or suspends. Called from
    /// within a stage's `run` (its callback came before it returned `.suspend`), it only
    /// notes that the chain goes on: the loop already running takes the next stage once that
    /// stage returns, so stages never nest and none runs twice.
    func resume() {
        if running {
            resumedWithin = true
            return
        }
        running = true
        defer { running = false }
        while true {
            let index = next
            next += 1
            let outcome: StageOutcome
            if index < stages.count {
                outcome = stages[index].stage.run(self)
            } else if index == stages.count, let last {
                outcome = last.run(self)
            } else {
                preconditionFailure("a chain ends in a stage that answers or hands the request on")
            }
            switch outcome {
            case .proceed:
                // A stage that resumed the chain and also proceeds would run the rest twice.
                assert(!resumedWithin, "a stage resumed the chain and returned .proceed")
                resumedWithin = false
                continue
            case .answer(let response, let close):
                resumedWithin = false
                answer(response, close: close)
                return
            case .suspend:
                if resumedWithin {
                    resumedWithin = false
                    continue
                }
                return
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

    /// Whether the request carries content: its body's framing, which an HTTP/2 stream of
    /// DATA frames sets with neither Content-Length nor Transfer-Encoding; for a decision,
    /// what the described head announces. Every rule that treats a request as bodiless (a
    /// preflight, the MCP method rules, `content-digest` coverage) asks this, not the fields.
    var hasContent: Bool {
        isDecision
            ? MCPTransportMethods.announcesContent(head.fields)
            : MCPTransportMethods.hasContent(exchange.body.framing)
    }
}

/// The request a decision judges, and its origin (`RoutedRequest.head`, `.origin`).
private final class JudgedRequest {
    let head: HTTPRequestHead
    let origin: ForwardedHeaders

    init(head: HTTPRequestHead, origin: ForwardedHeaders) {
        self.head = head
        self.origin = origin
    }
}
