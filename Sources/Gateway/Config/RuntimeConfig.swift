import OAuth

/// What the request path reads of a config that follows from its keys rather than being one:
/// computed once, by `GatewayConfig.finish()` after parsing and validation, so that a request
/// reads it as a stored value (no lowercasing or set building per request).
struct RuntimeConfig: Sendable {
    /// The cookie names the gateway sets (sessions, login state), with their chunk names:
    /// removed from requests before they go upstream.
    var ownCookieNames: Set<String> = []
    /// `reserved_header_prefix`, lowercased, as the header rules compare it.
    var reservedHeaderPrefixBytes: [UInt8]? = nil
    /// Identity header names stripped from every client request on every route (all that
    /// any route maps, plus the defaults), lowercased.
    var strippedIdentityHeaders: [[UInt8]] = []

    /// Nothing derived: a config that was never finished (the services' placeholder).
    init() {}

    init(_ cfg: GatewayConfig) {
        // Always, whether or not a route logs browsers in: a reload that removes the last
        // login route must not start passing session cookies (Redis session ids included) to
        // upstreams.
        var names: Set<String> = []
        for base in [cfg.session.cookieName, "tokengate_login"] {
            // __Secure-: the session cookie's name when it has a Domain (session.cookie_domain).
            for prefix in ["", "__Host-", "__Secure-"] {
                names.insert(prefix + base)
                for i in 1..<4 { names.insert("\(prefix)\(base)_\(i)") }
            }
        }
        ownCookieNames = names
        reservedHeaderPrefixBytes = cfg.reservedHeaderPrefix.map { Array($0.lowercased().utf8) }

        // Every identity header any route sets is stripped from every request on every route.
        var stripped = Set(IdentityHeaders.defaults.map { $0.0.lowercased() })
        // The default key-thumbprint header too, even where no route sets it: an upstream
        // might read it whatever the config says.
        if let jkt = DPoPRouteConfig().jktHeader { stripped.insert(jkt.lowercased()) }
        // Likewise the default assertion header: an upstream may check it on every path.
        stripped.insert(IdentityAssertionConfig.defaultHeader.lowercased())
        for route in cfg.routes {
            stripped.formUnion(route.options.forwarding.ownHeaders)
            stripped.formUnion(route.options.forwarding.identityHeaders.headerNames.map { $0.lowercased() })
            if let h = route.options.auth.tokenRoute?.dpop?.jktHeader { stripped.insert(h.lowercased()) }
        }
        for policy in cfg.signatures.values { stripped.formUnion(policy.headerNames) }
        strippedIdentityHeaders = stripped.sorted().map { Array($0.utf8) }
    }
}
