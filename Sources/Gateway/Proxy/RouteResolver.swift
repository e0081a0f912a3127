import OAuth
import Reactor

/// Finds a request's route and how it is forwarded, in order: validate host → normalize
/// path → route → scrub and forward headers (what the upstream request is built from).
/// Authentication runs after routing, on the route plan (docs/architecture.md, "Request path").
enum RouteResolver {
    enum Outcome {
        case reject(status: Int, error: String, description: String)
        /// `request(identity, session)` builds the upstream request once authentication has
        /// decided which identity headers to add; `session`: a browser session authenticated it
        /// (then no client-sent credential goes upstream, whatever the route forwards).
        case forward(plan: RoutePlan, path: String, query: String?, request: Forwarding)
        /// One of the gateway's own endpoints (a login endpoint, or a route's Protected
        /// Resource Metadata, RFC 9728 §3), on its built-in route (`OwnRoutes`).
        case ownEndpoint(OwnEndpoint, path: String, query: String?, request: Forwarding)
    }

    static let authorization = Array("authorization".utf8)
    static let dpop = Array("dpop".utf8)
    static let cookie = Array("cookie".utf8)
    static let traceparent = Array("traceparent".utf8)
    static let wellKnown = Array(ResourceIdentifier.wellKnownPrefix.utf8)

    /// What of a config the request path reads on every request, worked out once per config
    /// (and held by reference: passing the whole config along copied every field of it, and
    /// passing its parts along retained each for the call).
    final class Policy {
        let router: Router
        /// Indexed by `RouteConfig.index`.
        let plans: [RoutePlan]
        let loginEndpoints: LoginEndpoint.Paths
        /// The built-in routes the gateway's own endpoints are answered on.
        let ownRoutes: OwnRoutes
        /// RFC 9728 documents by the path each is served at; empty without a `resource`.
        let protectedResources: [String: ProtectedResourceDocument]
        /// The modules' own endpoints, by path.
        let modulePaths: [String: ModuleEndpoint]
        let reservedPrefix: [UInt8]?
        let identityNames: [[UInt8]]
        let trustedOnlyExtra: [[UInt8]]
        let ownCookies: Set<String>
        /// Every name the request path looks fields up by, this config's included, in one
        /// table (one lookup per client field).
        let names: HeaderNameTable

        /// `ownRoutes`: the built-in routes' plans, made with the worker's services; by
        /// default with no stages before their content.
        init(_ config: GatewayConfig, router: Router, plans: [RoutePlan], ownRoutes: OwnRoutes? = nil) {
            self.router = router
            self.plans = plans
            self.ownRoutes = ownRoutes ?? OwnRoutes(config, services: nil)
            loginEndpoints = LoginEndpoint.Paths(config)
            protectedResources = config.protectedResources
            modulePaths = config.modules.catalog.endpoints(config)
            reservedPrefix = config.reservedHeaderPrefixBytes
            identityNames = config.strippedIdentityHeaders
            trustedOnlyExtra = config.trustedProxyHeaders
            ownCookies = config.ownCookieNames
            func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
            names = HeaderNameTable(
                HeaderRules.fixedNames + config.strippedIdentityHeaders.map { (text($0), .identity) }
                    + config.trustedProxyHeaders.map { (text($0), .trustedOnly) }
                    + CORSPreflight.credentialHeaders.map { (text($0), .credential) }
                    + [
                        ("authorization", .authorization), ("dpop", .dpop), ("cookie", .cookie),
                        ("traceparent", .traceContext), ("tracestate", .traceContext),
                        ("grpc-timeout", .grpcTimeout)
                    ])
        }
    }

    /// `host`: the Host field's first value and how many there are, if the caller read them.
    static func prepare(
        _ head: HTTPRequestHead, peerTrusted: Bool, policy: Policy,
        host knownHost: (first: String?, count: Int)? = nil, hosts: HostMemo? = nil
    ) -> Outcome {
        guard let method = head.method else {
            return .reject(status: 405, error: "invalid_request", description: "method not allowed")
        }
        let headers = head.fields
        // Framing and field syntax (token names, field-value bytes, one well-formed
        // Content-Length, no Transfer-Encoding but chunked) are the engine's: its parser
        // refuses every request that breaks them before the gateway sees it (RFC 9112).
        // RFC 9112 §3.2: a request with more than one Host, or an HTTP/1.1 request with none,
        // gets 400.
        let (rawHost, hostCount) = knownHost ?? headers.firstAndCount("Host")
        if hostCount > 1 || (hostCount == 0 && head.version >= (1, 1)) {
            return .reject(status: 400, error: "invalid_request", description: "exactly one Host header is required")
        }
        var host = ""
        if let raw = rawHost {
            guard let h = hosts.map({ $0.normalize(raw) }) ?? HostNormalizer.normalize(raw) else {
                return .reject(
                    status: 400, error: "invalid_request", description: "the Host header is not a valid host")
            }
            host = h
        }
        let normalized: PathNormalizer.Normalized
        switch PathNormalizer.normalize(target: head.target) {
        case .success(let n): normalized = n
        case .failure(let why): return .reject(status: 400, error: "invalid_request", description: describe(why))
        }
        // The gateway's own endpoints come before routing: a catch-all route must not send
        // them upstream, and the route a metadata document describes requires a token, which
        // a client must read the document to get (RFC 9728 §5.1).
        var own: OwnEndpoint?
        if let endpoint = policy.loginEndpoints.match(normalized.path) {
            own = .login(endpoint)
        } else if !policy.protectedResources.isEmpty, normalized.path.utf8.starts(with: wellKnown),
            let document = policy.protectedResources[normalized.path]
        {
            own = .protectedResourceMetadata(document)
        } else if !policy.modulePaths.isEmpty, let endpoint = policy.modulePaths[normalized.path] {
            own = .module(endpoint)
        }
        if let own {
            let forwarding = Forwarding(
                method: method, target: "", plan: policy.ownRoutes.plan(for: own), policy: policy,
                peerTrusted: peerTrusted, upstreamHost: "")
            return .ownEndpoint(own, path: normalized.path, query: normalized.query, request: forwarding)
        }
        let plan: RoutePlan
        switch policy.router.decide(host: host, method: method, normalized: normalized) {
        case .notFound:
            return .reject(status: 404, error: "not_found", description: "no route for this request")
        case .escapesRoute:
            return .reject(
                status: 400, error: "invalid_request",
                description: "the path's dot-segments leave the route they start in")
        case .route(let index):
            plan = policy.plans[index]
        }
        guard plan.upstream != nil else {
            return .reject(status: 502, error: "bad_gateway", description: "no upstream")
        }
        let upstreamHost: String
        switch plan.hostHeader {
        case .upstream: upstreamHost = plan.upstreamAuthority
        case .preserve: upstreamHost = rawHost ?? plan.upstreamAuthority
        case .fixed(let value): upstreamHost = value
        }
        var target = plan.upstreamPath(normalized.path)
        if let q = normalized.query { target += "?" + q }
        let forwarding = Forwarding(
            method: method, target: target, plan: plan, policy: policy, peerTrusted: peerTrusted,
            upstreamHost: upstreamHost)
        return .forward(plan: plan, path: normalized.path, query: normalized.query, request: forwarding)
    }

    /// The upstream request a routed request becomes, built once authentication has decided
    /// which identity headers to add and which body goes on (the client's stream, or a form
    /// with its token removed). A value, not a closure: most requests build it at once.
    struct Forwarding {
        let method: HTTPMethod
        let target: String
        let plan: RoutePlan
        let policy: Policy
        let peerTrusted: Bool
        let upstreamHost: String

        /// The rule for the client's fields of a request admitted with `session` (a browser
        /// session) or as a let-through CORS `preflight`.
        /// `peerTrusted`: whether the fields come from a trusted proxy (by default, whether the
        /// request's connection does).
        func clientFieldRule(
            listed: [[UInt8]], session: Bool, preflight: Bool, peerTrusted: Bool? = nil, dropTraceContext: Bool = false
        ) -> ClientFieldRule {
            // The credential goes upstream only when the route says so.
            let dropAuthorization = session || !plan.forwardsCredential
            // The proof was for the gateway (its htu names the gateway's URL); it goes on only if
            // the route asks (`forward_proof`), on every other route kind too: a bearer, public or
            // MCP route never checked it, and an upstream that reads DPoP would take it as
            // checked. With token_exchange, the upstream gets the exchanged token alone.
            let forwardsProof = plan.forwardsProof
            let dropProof = session || plan.exchanges || !forwardsProof
            return ClientFieldRule(
                policy: policy, listed: listed, reservedPrefix: policy.reservedPrefix,
                peerTrusted: peerTrusted ?? self.peerTrusted, dropAuthorization: dropAuthorization,
                dropProof: dropProof, dropTraceContext: dropTraceContext, preflight: preflight,
                ownCookies: policy.ownCookies, ownedFields: plan.ownedFields)
        }

        /// `session`: a browser session authenticated the request (then no client-sent
        /// credential goes upstream, whatever the route forwards). `preflight`: a CORS preflight
        /// let through unauthenticated (`cors_preflight: allow`), which carries no credential at
        /// all upstream (no Authorization, Proxy-Authorization, DPoP, Cookie).
        /// `headers`: the client's fields; `forwarded`: what the gateway says of the client.
        /// `trace`: the request's spans, whose CLIENT span the upstream's `traceparent` names;
        /// `dropTraceContext`: the client's trace context does not go on (RequestContext).
        /// `grpcTimeout`: a gRPC call's deadline as the gateway keeps it (GRPCDeadlineStage),
        /// sent in place of the client's.
        func request(
            headers: HTTP1Fields, listsConnectionOptions: Bool = true, forwarded: ForwardedHeaders,
            identity: [(String, String)], session: Bool, preflight: Bool, body: RequestBody,
            trace: RequestTrace? = nil, dropTraceContext: Bool = false, grpcTimeout: String? = nil
        ) -> UpstreamCall.Request {
            let listed = listsConnectionOptions ? HeaderRules.connectionTokens(headers) : []
            var built = clientFieldRule(
                listed: listed, session: session, preflight: preflight, dropTraceContext: dropTraceContext)
            built.dropGRPCTimeout = grpcTimeout != nil
            // A constant for the per-field test: a closure over a `var` copied the rule (its
            // references retained) on every field.
            let rule = built
            let ownCookies = rule.ownCookies
            let passed = HTTP1ForwardedFields(headers, keeping: { rule.keeps($0) })
            // What the gateway adds, in one allocation: the fields below (64 bytes of names),
            // the identity headers, and what is left of a Cookie.
            var out = HTTP1Fields()
            var bytes = 64 + upstreamHost.utf8.count + forwarded.forwardedFor.utf8.count
            bytes += forwarded.forwardedProto.utf8.count + (forwarded.forwardedHost?.utf8.count ?? 0)
            bytes += forwarded.requestID.utf8.count + (grpcTimeout?.utf8.count ?? 0)
            for (name, value) in identity { bytes += name.utf8.count + value.utf8.count }
            if !ownCookies.isEmpty { headers.forEachValue(named: "Cookie") { bytes += 6 + $0.count } }
            if let trace { bytes += 70 + (trace.traceState?.utf8.count ?? 0) }
            out.reserveCapacity(
                bytes: bytes, fields: 6 + identity.count + (ownCookies.isEmpty ? 0 : 2) + (trace == nil ? 0 : 2))
            if !ownCookies.isEmpty && !preflight {
                for value in headers.values("Cookie") {
                    if let kept = CookieFilter.without(ownCookies, value) { out.append("Cookie", kept) }
                }
            }
            for (name, value) in identity { out.append(name, value) }
            out.append("Host", upstreamHost)
            out.append("X-Forwarded-For", forwarded.forwardedFor)
            out.append("X-Forwarded-Proto", forwarded.forwardedProto)
            if let h = forwarded.forwardedHost { out.append("X-Forwarded-Host", h) }
            out.append("X-Request-Id", forwarded.requestID)
            if let grpcTimeout { out.append("grpc-timeout", grpcTimeout) }
            if let trace {
                out.append(name: RouteResolver.traceparent.span, value: trace.upstreamTraceparent.span)
                if let state = trace.traceState { out.append("tracestate", state) }
                let path = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(target[..<$0]) } ?? target
                trace.upstreamURL =
                    (plan.upstream?.config.tls == nil ? "http://" : "https://") + plan.upstreamAuthority + path
                trace.upstreamAuthority = plan.upstreamAuthority
            }
            return UpstreamCall.Request(
                method: method, target: target, fields: consume out, forwarded: consume passed,
                body: body.framing == .none ? nil : body,
                trailerPolicy: listed.isEmpty && plan.ownedFields.isEmpty
                    ? policy : DroppingTrailerPolicy(policy, dropped: listed + plan.ownedFields))
        }
    }

    /// Which of a client's fields go upstream as they are: what a proxied request drops,
    /// and what an ext_authz `Check` tells Envoy to remove. A value, so that the proxied
    /// request's per-field test allocates nothing.
    struct ClientFieldRule {
        /// The config's policy, whose name table (`names`) every field is looked up in: held
        /// by reference, as a copy of the table retained its three arrays, once per request.
        let policy: Policy
        /// The names the client's Connection field lists (hop-by-hop, RFC 9110 §7.6.1).
        let listed: [[UInt8]]
        let reservedPrefix: [UInt8]?
        let peerTrusted: Bool
        let dropAuthorization: Bool
        let dropProof: Bool
        /// `traceparent` and `tracestate` (the gateway sends its own, or none: see Tracer).
        let dropTraceContext: Bool
        let preflight: Bool
        /// The gateway's own cookies (sealed sessions, login state), which are not the
        /// upstream's: the Cookie fields are dropped, then sent again without them.
        let ownCookies: Set<String>
        /// The fields the gateway owns on the route (its API keys', its upstream credential's):
        /// dropped whoever the caller.
        let ownedFields: [[UInt8]]
        /// The client's `grpc-timeout`, which the gateway replaces with the deadline it keeps.
        var dropGRPCTimeout = false

        func keeps(_ name: Span<UInt8>) -> Bool {
            let lists = policy.names.lists(name)
            // Client-sent copies of identity headers never pass, on any route.
            if lists.contains(.identity) { return false }
            if preflight && lists.contains(.credential) { return false }
            if dropAuthorization && lists.contains(.authorization) { return false }
            if dropProof && lists.contains(.dpop) { return false }
            if dropTraceContext && lists.contains(.traceContext) { return false }
            if !ownCookies.isEmpty && lists.contains(.cookie) { return false }
            if dropGRPCTimeout && lists.contains(.grpcTimeout) { return false }
            if !ownedFields.isEmpty && HeaderRules.equalsAny(name, ownedFields) { return false }
            return HeaderRules.forwardsRequestHeader(
                name, lists: lists, listed: listed, reservedPrefix: reservedPrefix, peerTrusted: peerTrusted)
        }
    }

    static func describe(_ r: PathNormalizer.Rejection) -> String {
        switch r {
        case .notOriginForm: return "the request target must be a path starting with /"
        case .badPercentEncoding: return "the path has a malformed percent-encoding"
        case .encodedSlash: return "the path has an encoded slash (%2F)"
        case .backslash: return "the path has a backslash"
        case .controlCharacter: return "the request target has a control character"
        case .escapesRoot: return "the path's dot-segments climb above the root"
        case .fragment: return "the request target has a fragment"
        case .pathParameter: return "the path has a ';' (path parameters are not accepted)"
        case .tooManyDotSegments: return "the path has too many dot-segments"
        }
    }
}
