import Reactor

/// What the pipeline knows about one request once it is routed; carried to the access log.
/// One object per request, shared by the stages and callbacks that handle it (a struct of
/// this size was copied, field by field, into every closure and call on the request path).
/// Loop-thread only, like the request.
final class RequestContext {
    /// X-Forwarded-* and the request id as the gateway sends them on (see ForwardedHeaders).
    /// A `let`: handed to the stages that read it without a copy.
    let forwarded: ForwardedHeaders
    var requestID: String { forwarded.requestID }
    var start: Double
    var method: String
    var path: String
    var route: String
    /// The connection's peer is one of `trusted_proxies` (a front that may not pass 1xx on).
    var behindTrustedProxy = false
    /// Metrics id of the route (-1: no route).
    var routeID: Int
    /// Set by authentication, for the access log.
    var subject: String? = nil
    var clientID: String? = nil
    var issuer: String? = nil
    /// Why the request was refused: the access log's `rejection` (and `reason`).
    var rejection: Rejection? = nil
    /// Headers the gateway adds to the upstream's response (a fresh `DPoP-Nonce`). This and
    /// the two below are read by every proxied response (`ProxyExchange.clientFields`):
    /// unchecked exclusivity, as they are only ever appended to or read whole, never held
    /// across a call out.
    @exclusivity(unchecked) var responseHeaders: [(String, String)] = []
    /// Upstream response headers that must not reach the client: on a route where the
    /// gateway checks DPoP, the upstream's own `DPoP-Nonce` would send clients nonces the
    /// gateway never issued.
    @exclusivity(unchecked) var droppedResponseHeaders: [String] = []
    /// A request sent upstream with a DPoP-bound token of the gateway's: the upstream's nonce
    /// challenge is answered here (UpstreamDPoP.swift).
    var upstreamDPoP: UpstreamDPoPExchange?
    /// On session routes: the gateway's cookie names, which the upstream may not set.
    @exclusivity(unchecked) var ownCookies: Set<String> = []
    /// The route lets the upstream's answer go to a temp file while the client is behind
    /// (`buffering:`, on by default).
    var buffersResponse = true
    /// The route's `request_buffering`: a body is read whole before the upstream call starts.
    var buffersRequest = true
    /// The request asks for a WebSocket upgrade (allowed on its route).
    var upgrade = false
    /// The key the upgrade went upstream with, which the upstream's 101 must answer.
    var upstreamWebSocketKey = ""
    /// Upgrades on session routes: the login route whose session the tunnel re-checks, and when
    /// the session's absolute timeout ends it (Unix seconds).
    var tunnelSession: (route: LoginRouteConfig, endsAt: Int64)? = nil
    /// A `tools/list` on an MCP route: its answer is filtered on the way back (ToolListRelay).
    var toolListFilter: ToolListFilter? = nil
    /// Upgrades on `close_at_token_expiry` routes: when the access token expires.
    var tunnelTokenExpiry: Int64? = nil
    /// A decision-mode request: its answer is a verdict an ingress reads by its status, where
    /// a 200 lets the request through, so it never takes a gRPC refusal's form (the
    /// ingress shapes what it passes on to a gRPC client).
    var isVerdict = false
    /// An ext_authz `Check` (gRPC): every answer is written as a `CheckResponse` about this
    /// judged request.
    var extAuthzCheck: ExtAuthzCheck? = nil
    /// The request's spans when it is traced (`tracing`); nil otherwise.
    var trace: RequestTrace? = nil
    /// The client's `traceparent`/`tracestate` stay off the upstream request: tracing is on
    /// and the gateway did not join a trace it leaves unsampled.
    var dropClientTraceContext = false

    init(forwarded: ForwardedHeaders, start: Double, method: String, path: String, route: String, routeID: Int) {
        self.forwarded = forwarded
        self.start = start
        self.method = method
        self.path = path
        self.route = route
        self.routeID = routeID
    }
}
