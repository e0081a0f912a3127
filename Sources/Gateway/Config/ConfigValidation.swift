import Yams

/// The checks between keys: a key that is valid only with another, or never with it. The
/// readers parse each key on its own; this pass then judges the route as read, and reports
/// every problem with its key path on the same `ConfigReader` as the readers' own.
enum ConfigValidation {
    /// Every cross-key problem between sections, once they are all read (a route's own are
    /// reported as each route is read, by `route`).
    static func gateway(_ cfg: GatewayConfig, top: [String: Node], _ r: ConfigReader) {
        ConfigParser.checkDecision(cfg, node: top["decision"], r)
        ConfigParser.checkUserinfoClients(cfg, r)
        if cfg.publicURLs.isEmpty && cfg.trustedProxies.isEmpty,
            let route = cfg.routes.first(where: { $0.options.auth.tokenRoute?.dpop != nil })
        {
            // RFC 9449 §4.3 check 9 compares htu with the URL the client addressed; a client's
            // own Host header cannot say that (it would let a proof for another origin in).
            r.problem(
                "public_url", top["routes"],
                "\(route.name) checks DPoP proofs: set public_url (the origin clients use, e.g. https://api.example.com) or trusted_proxies (whose X-Forwarded-Proto/-Host then say it)"
            )
        }
        ConfigParser.checkCookieDomain(cfg, node: top["session"], r)
        if let admin = cfg.adminListen, cfg.listeners.contains(where: { $0.address == admin }) {
            r.problem(
                "admin_listen", ConfigKeyPath.node(at: "admin_listen", in: top),
                "must differ from every public listen address")
        }
    }

    /// What a route's checks look at: its keys as given, and what was read from them.
    struct RouteInput {
        var keys: RouteKeys
        /// The route's key path (`routes[N]`).
        var path: String
        var auth: AuthMode
        var route: RouteConfig
        var tokens: TokenRouteConfig?
        /// `forward_token: true` on `auth: login` (the session's token goes upstream).
        var forwardsSessionToken: Bool
        /// The route's upstream speaks HTTP/2.
        var http2Upstream: Bool
        /// `match:` parsed: only then are the options read, and checked.
        var matched: Bool
    }

    /// Every cross-key problem of one route, in a fixed order.
    static func route(_ x: RouteInput, _ r: ConfigReader) {
        let k = x.keys
        func present(_ keys: [GivenNode?], _ message: String) {
            for given in keys.compactMap({ $0 }) { r.problem(given.path, given.node, message) }
        }
        switch x.auth {
        case .none:
            present(
                [k.issuers, k.require, k.forwardToken, k.tokenInQuery, k.tokenInBody, k.dpop, k.apiKeys],
                "has no effect with auth: none; remove it or set auth")
        case .login:
            present(
                [k.issuers, k.dpop, k.tokenInQuery, k.tokenInBody],
                "has no effect with auth: login (use auth: login_or_token to accept tokens too)")
            present([k.apiKeys], "keys are refused on login routes (a browser signs in)")
        case .login_or_token:
            // A credential in the URL or body would reach the upstream on the session path.
            present([k.tokenInQuery, k.tokenInBody], "is not accepted with auth: login_or_token")
            present([k.apiKeys], "keys are refused on login routes (a browser signs in)")
        case .bearer, .dpop, .token, .api_key: break
        }
        if x.tokens?.tokenExchange != nil, x.tokens?.dpop?.forwardProof == true {
            r.problem(
                "\(x.path).dpop.forward_proof", k.dpop?.node,
                "cannot be used with token_exchange: the caller's proof is for the caller's token, which the upstream never gets"
            )
        }
        if x.tokens == nil {
            present(
                [k.closeAtTokenExpiry],
                "needs auth: bearer, dpop, token or login_or_token (it ends tunnels opened with an access token)")
        }
        if x.auth != .login && x.auth != .login_or_token {
            present(
                [k.client, k.clients],
                "has no effect with auth: \(x.auth.rawValue) (it names the client of a login)")
        }
        // HTTP/2 has no Upgrade (RFC 9113 §8.6): an HTTP/2 upstream takes no WebSocket.
        if x.http2Upstream, !x.route.options.upgrade.protocols.isEmpty, let n = k.upgrades {
            r.problem(
                n.path, n.node,
                "upstream \(x.route.upstream) speaks HTTP/2, which has no Upgrade; remove upgrades or give this route an http1 upstream"
            )
        }
        if x.matched { routeOptions(x, r) }
    }

    /// The options against the route's auth and against each other.
    private static func routeOptions(_ x: RouteInput, _ r: ConfigReader) {
        let k = x.keys
        let p = x.path
        let o = x.route.options
        if x.auth == .none, o.cors.preflight {
            r.problem(
                k.corsPreflight?.path ?? p, k.corsPreflight?.node,
                "has no effect with auth: none (every request passes already); remove it")
        }
        if x.auth != .login && x.auth != .login_or_token {
            if let n = k.passAccessToken {
                r.problem(
                    n.path, n.node,
                    "passes a browser session's token: it needs auth: login or login_or_token (a token route forwards the caller's own token with forward_token: true)"
                )
            }
            if let n = k.passIDToken {
                r.problem(n.path, n.node, "passes a browser session's token: it needs auth: login or login_or_token")
            }
        }
        // On auth: login, forward_token: true sends the session's token (as Authorization,
        // set after this pass); on login_or_token it is about the caller's own token, and both
        // options can be set.
        if x.forwardsSessionToken, o.forwarding.passAccessToken != nil {
            r.problem(
                k.forwardToken?.path ?? p, k.forwardToken?.node,
                "give forward_token or pass_access_token, not both (forward_token: true is pass_access_token: Authorization)"
            )
        }
        let own = o.forwarding.ownHeaders
        if Set(own).count != own.count {
            r.problem(
                p, (k.identityAssertion ?? k.passIDToken ?? k.certificateHeaders)?.node,
                "pass_access_token, pass_id_token, identity_assertion.header and certificate_headers must be different headers"
            )
        }
        for h in own
        where x.route.options.forwarding.identityHeaders.headerNames.contains(where: { $0.lowercased() == h }) {
            r.problem(
                p, k.headers?.node,
                "the header \(h) is both an identity header and a token/assertion header; rename one")
        }
    }
}
