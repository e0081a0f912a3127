import Reactor

/// What the pipeline knows about one request; carried to the access log. One object per
/// request, shared by the stages and callbacks that handle it (a struct of this size was
/// copied, field by field, into every closure and call on the request path). What is known
/// at its head does not change; where it went (`info`) is set once, by the stage that
/// placed it; who it came from (`caller`) once, by the stage that authenticated it.
/// Loop-thread only, like the request.
final class RequestContext {
    /// X-Forwarded-* and the request id as the gateway sends them on (see ForwardedHeaders).
    /// A `let`: handed to the stages that read it without a copy.
    let forwarded: ForwardedHeaders
    var requestID: String { forwarded.requestID }
    /// When the request's head was handed to the gateway (the monotonic clock).
    let start: Double
    /// What the log, the metrics and the trace say the request was and where it went.
    private(set) var info: RequestInfo
    private var placed = false
    var method: String { info.method }
    var path: String { info.path }
    var route: String { info.route }
    /// Metrics id of the route (-1: no route).
    var routeID: Int { info.routeID }
    /// What the route's `path_template` captured, in template order (`PathParameters.none`
    /// on other routes); set with the route, by `place`.
    private(set) var pathParameters = PathParameters.none
    /// The connection's peer is one of `trusted_proxies` (a front that may not pass 1xx on).
    var behindTrustedProxy = false
    /// What kind of request this is: proxied, an upgrade, or a decision's.
    var kind: RequestKind = .proxy
    /// Who the request was admitted as (set once, by the authentication stage; for the log).
    private(set) var caller: CallerIdentity? = nil
    /// Why the request was refused: the access log's `rejection` (and `reason`).
    var rejection: Rejection? = nil
    /// What the gateway does to the upstream's answer on its way back: fields it adds and
    /// drops, its cookies, and the response stages the request's stages installed. Every
    /// proxied response reads it (`ClientWriter`): unchecked exclusivity, as it is only ever
    /// added to or read whole, never held across a call out.
    @exclusivity(unchecked) var response = ResponseEdits()
    /// The request's spans when it is traced (`tracing`), and whether the client's trace
    /// context stays off the upstream request.
    @exclusivity(unchecked) var tracing = TraceTerms()
    /// What each capability keeps about the request, under its own key (`RequestStateKey`):
    /// an MCP call, the authorizer's decision, an upgrade's terms, a gRPC deadline, …
    /// Unchecked exclusivity, as `response`: a slot is read or set whole, never held across a
    /// call out (a checked access costs a runtime call each time, on every request).
    @exclusivity(unchecked) var state = RequestState()

    /// The request's spans when it is traced; nil otherwise.
    var trace: RequestTrace? { tracing.trace }

    /// Notes who the request was admitted as; a request has one caller.
    func authenticated(_ identity: CallerIdentity) {
        precondition(caller == nil, "a request is authenticated once")
        caller = identity
    }

    /// Notes where the request went: its (normalized) path, and its route or the gateway's own
    /// endpoint that answers it, with what the route's template captured; for a decision, the
    /// original request's method. Once.
    func place(
        path: String, route: String? = nil, routeID: Int = -1, method: String? = nil,
        parameters: PathParameters? = nil
    ) {
        precondition(!placed, "a request is placed once")
        placed = true
        info = RequestInfo(method: method ?? info.method, path: path, route: route ?? info.route, routeID: routeID)
        if let parameters { pathParameters = parameters }
    }

    init(forwarded: ForwardedHeaders, start: Double, method: String) {
        self.forwarded = forwarded
        self.start = start
        info = RequestInfo(method: method, path: "", route: "-", routeID: -1)
    }
}

/// Who a request was admitted as, for the access log, traces and tunnels: set once, by the
/// stage that verified the token or the session.
struct CallerIdentity {
    var subject: String?
    var clientID: String?
    /// The issuer's config name, or the key set's for a key's caller.
    var issuer: String?
    /// The public id of the API key that admitted the request (never the key).
    var apiKey: String? = nil
}

/// The kind of a request, fixed by the time its route's stages run.
enum RequestKind {
    /// Proxied to its route's upstream.
    case proxy
    /// A WebSocket upgrade (allowed on its route), proxied and then tunnelled.
    case upgrade
    /// A decision endpoint's own request, or the ext_authz gRPC call itself, while the request
    /// it asks about is not read yet: it is answered as a verdict, never in a gRPC refusal's
    /// form (the ingress shapes what it passes on to a gRPC client).
    case decisionCall
    /// A decision (nginx auth_request, forwardAuth, Envoy's HTTP ext_authz) about the original
    /// request: its answer is a verdict an ingress reads by its status.
    case verdict(DecisionRequest)
    /// An ext_authz `Check` (gRPC): every answer is written as a `CheckResponse` about the
    /// judged request.
    case extAuthz(ExtAuthzCheck)

    var isDecision: Bool {
        switch self {
        case .proxy, .upgrade: return false
        case .decisionCall, .verdict, .extAuthz: return true
        }
    }

    var isUpgrade: Bool {
        if case .upgrade = self { return true }
        return false
    }

    /// The original request a decision judges.
    var original: DecisionRequest? {
        switch self {
        case .verdict(let original): return original
        case .extAuthz(let check): return check.original
        case .proxy, .upgrade, .decisionCall: return nil
        }
    }
}

/// Where a request went, as its access log line and trace say: its method, its path, and its
/// route (a route's name, or the gateway's own endpoint: `login`, `decision`, …; `-` for
/// none) with that route's metrics id (-1: no route).
struct RequestInfo {
    let method: String
    let path: String
    let route: String
    let routeID: Int
}

/// A request's tracing: its spans when it is traced, and whether the client's
/// `traceparent`/`tracestate` stay off the upstream request (tracing is on and the gateway
/// did not join a trace it leaves unsampled).
struct TraceTerms {
    var trace: RequestTrace? = nil
    var dropClientContext = false
}
